import { readFileSync } from 'node:fs';
import type { VersionResponse } from '../../generated/types.ts';
import { loadSpec } from './spec.ts';
import { packageFile } from '../base/paths.ts';

/** What this deployment runs (GET /version): read once, so the probe costs nothing per call. */
export const serviceVersion: () => VersionResponse = (() => {
  const answer: VersionResponse = {
    service: 'event-feed',
    version: String(JSON.parse(readFileSync(packageFile('package.json'), 'utf8')).version),
    contract: String(loadSpec().info.version),
  };
  return () => answer;
})();
