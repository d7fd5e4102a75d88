import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Type-checks `files` of a consumer's project folder (a package installed there from its tarball)
 * as a strict TypeScript user would, against the declarations it installed: a tsconfig of its own
 * (NodeNext, strict, the libraries' declarations checked too), the repository's tsc and @types/node.
 * What tsc printed, and its exit code.
 */
export function typecheckConsumer(
  dir: string,
  files: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; output: string }> {
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        typeRoots: [join(root, 'node_modules', '@types')],
        types: ['node'],
      },
      files,
    }),
  );
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  return new Promise((resolve) =>
    execFile(process.execPath, [tsc, '-p', dir], { cwd: dir, env, maxBuffer: 10 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
    ),
  );
}
