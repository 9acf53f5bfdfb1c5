// The scenarios of `npm run bench`, in the order they run (bench/README.md says what each measures).
export const SCENARIOS = ['small', 'small-latency', 'small-workers', 'files-page', 'upload', 'download', 'sse', 'websocket', 'idle', 'auth-providers'] as const;
export type Scenario = (typeof SCENARIOS)[number];
