import { loadHere } from './load-here.ts';

// The operations over HTTP and MCP, on a server in this process (what qualifies: load-here.ts).
await loadHere(['version', 'smoke', 'emit-event', 'event-feed', 'keys-api', 'mcp-tools-list', 'webhook-contract']);
