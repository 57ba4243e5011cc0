// What the openai@6 client tests share: the client and ajv from .cache/node (scripts/setup_test_data.sh installs
// them; without them the importing test exits 77, skipped), `require` for other packages there, the repository root,
// and `taco_llm serve` started on a free port.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';

export const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
export const require = createRequire(path.join(root, '.cache/node/package.json'));
let openai, ajv;
try {
  openai = require('openai').default ?? require('openai');
  ajv = require('ajv').default ?? require('ajv');
} catch (e) {
  console.log('openai / ajv not installed in .cache/node (run scripts/setup_test_data.sh): skipped');
  process.exit(77);
}
export const OpenAI = openai;
export const Ajv = ajv;

// Starts `binary serve --host 127.0.0.1 --port 0 --disable-log-requests ...args` in the repository root with `env`
// added; resolves to { server, port } once it says where it serves.
export async function startServer(binary, args = [], env = {}) {
  const server = spawn(binary, ['serve', '--host', '127.0.0.1', '--port', '0', '--disable-log-requests', ...args],
    { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/serving .* on https?:\/\/[^:]+:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    server.on('exit', (code) => reject(new Error(`server exited early with ${code}`)));
  });
  return { server, port };
}
