// WebSocket bytes for tests that speak the protocol over raw sockets (RFC 6455): the client's
// handshake, an upstream's 101 to it (the accept key of that handshake's key), a masked text frame.
export const HANDSHAKE =
  'GET /ws/socket.io/ HTTP/1.1\r\nHost: gw\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n';
export const ACCEPT =
  'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n';

/** A masked client text frame (payload under 126 bytes). */
export function frame(text: string): Buffer {
  const p = Buffer.from(text);
  const mask = Buffer.from([1, 2, 3, 4]);
  const out = Buffer.alloc(6 + p.length);
  out[0] = 0x81;
  out[1] = 0x80 | p.length;
  mask.copy(out, 2);
  for (let i = 0; i < p.length; i++) out[6 + i] = p[i]! ^ mask[i & 3]!;
  return out;
}
