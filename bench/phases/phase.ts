/** The shape of one phase of the bench; the phases table lists them in the order they run. */
import type { PhaseContext } from '../context.ts';

export interface Phase {
  /** Its name in `--phases`. */
  name: string;
  /**
   * 'shared': measures the server every database's run starts once (`PhaseContext.server`);
   * 'own': starts servers of its own (from `PhaseContext.root`); 'none': measures no server.
   */
  server: 'shared' | 'own' | 'none';
  /** Run on both sides under `--against` (false: it measures no server code, so it runs once, on the current side). */
  compares: boolean;
  /** Only on this database. */
  only?: 'sqlite' | 'postgres';
  /** Measures, and writes its figures into `ctx.result`. */
  run(ctx: PhaseContext): Promise<void>;
}
