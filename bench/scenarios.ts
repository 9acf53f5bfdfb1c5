// The scenarios of `npm run bench`, in the order they run (bench/README.md says what each measures).
// `idle` runs first: its figure is RSS growth, which a peer that has already grown and freed
// memory in earlier scenarios (5,000 WebSockets, 1 GiB bodies) hides by reusing it.
export const SCENARIOS = ['idle', 'small', 'small-latency', 'small-workers', 'files-page', 'upload', 'download', 'sse', 'websocket', 'auth-providers'] as const;
export type Scenario = (typeof SCENARIOS)[number];
