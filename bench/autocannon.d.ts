// The part of autocannon's programmatic API the bench uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';
  namespace autocannon {
    interface Options {
      url: string;
      headers?: Record<string, string>;
      connections?: number;
      duration?: number;
      timeout?: number;
      /** ms between samples; a stop() takes effect at the next one */
      sampleInt?: number;
      method?: string;
      body?: string | Buffer;
    }
    interface Result {
      errors: number;
      timeouts: number;
      non2xx: number;
      requests: { total: number; average: number };
    }
    interface Instance extends EventEmitter {
      stop(): void;
    }
  }
  function autocannon(options: autocannon.Options): autocannon.Instance;
  export default autocannon;
}
