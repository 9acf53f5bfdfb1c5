// The real admin guard (gateway/enforcement/socketio-guard.ts) for tests that join sockets through the
// proxy: `judge` answers every join it is asked about; the bypass is off (note events are read).
import type { Guarding } from '../../gateway/upstream/proxy.js';
import { WebSocketGuard } from '../../gateway/enforcement/socketio-guard.js';

export function realGuard(judge: () => Promise<boolean>, mayForward: () => boolean = () => true): Guarding {
  return {
    make: (send, fail, flow) =>
      new WebSocketGuard(
        judge,
        () => {},
        send,
        (code, why) => fail(code, why),
        true,
        flow,
      ),
    mayForward,
  };
}
