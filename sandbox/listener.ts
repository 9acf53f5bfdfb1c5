// Stop and start a stand-in's listener on the same loopback port (outage tests).
import type http from 'node:http';

export function loopbackListener(server: http.Server) {
  return {
    listen: (port: number) =>
      new Promise<void>((resolve, reject) => {
        if (server.listening) return resolve();
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
