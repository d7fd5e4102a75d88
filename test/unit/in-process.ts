import { loadHere } from './load-here.ts';

// Modules called directly, no server: the rules of the layout, the contract, the feed, the store's
// pages and keys, the documentation's links (what qualifies: load-here.ts).
await loadHere([
  'architecture',
  'doc-links',
  'contract-event-types',
  'contract-examples',
  'cursor',
  'feed-page',
  'feed-heads',
  'held-reads',
  'recent-events',
  'list-events-plans',
  'migrations',
  'store-rows',
  'database-urls',
  'api-key-cache',
  'library',
  'webhook-target-policy',
  'client-address',
  'conformance-rate-limits',
  'oauth-rules',
]);
