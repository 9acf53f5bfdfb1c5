// The scenarios of `npm run bench`, in the order they run (bench/README.md says what each measures).
// `idle` measures fresh processes of its peers (bench/run.ts), so its place in the order changes
// neither its figures nor the peak RSS of the scenarios after it.
export const SCENARIOS = ['small', 'small-latency', 'small-workers', 'files-page', 'upload', 'download', 'sse', 'websocket', 'idle', 'auth-providers'] as const;
export type Scenario = (typeof SCENARIOS)[number];
