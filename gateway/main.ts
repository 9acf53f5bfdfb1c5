// The production entry (`npm start`, the image, each GATEWAY_WORKERS worker). SIGHUP is held before
// anything else loads: a static import would load the whole gateway first (gateway/hangups.ts).
import { holdHangups } from './hangups.js';

holdHangups();
await import('./serve.js');
