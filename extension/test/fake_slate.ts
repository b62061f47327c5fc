/**
 * A stand-in for the `slate` binary, for the main-session tests (run through a `#!/bin/sh`
 * wrapper that {@link fakeSlate} writes). Every run appends `{argv, cwd}` to `$FAKE_SLATE_LOG`.
 *
 * - `serve …`: a coordinator on a Unix socket: operator `hello` (recorded with its params),
 *   `subscribe`, `shutdown` (answers, then exits), `parentToolStart` (refused for `bash` while
 *   `$FAKE_SLATE_LEASE` is set; `read` is exempt), `parentToolEnd`, and `delegate` (foreground
 *   answers a preview; background admits call 7 and, 50 ms later, notifies its outcome to every
 *   subscriber). Prints the three lines of `slate serve`; exits on stdin EOF (logged).
 * - `watch …`: prints a widget document (one row, width 100), answers each stdin size request
 *   with that width; a width narrower than the row gets no rows and the command exits.
 * - anything else: prints `ran <argv>` and exits 0 (`status` with `FAKE_SLATE_FAIL` exits 3).
 */
import { appendFileSync, chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const argv = process.argv.slice(2);
const log = (record: Record<string, unknown>) => {
	const file = process.env.FAKE_SLATE_LOG;
	if (file !== undefined) {
		appendFileSync(file, `${JSON.stringify(record)}\n`);
	}
};

export const PARENT = "6f1c0000-0000-4000-8000-0000000000aa";
export const LEASE_REFUSAL =
	"parentToolStart: child 0b6a0000-0000-4000-8000-00000000000a@1 holds the writer lease; parent mutations are rejected";
const SNAPSHOT = { id: "0b6a0000-0000-4000-8000-00000000000a", generation: 1, status: "running" };

/** Write an executable `slate` that runs this file with the current Node; returns its path. */
export function fakeSlate(dir: string): string {
	const path = join(dir, "slate");
	const self = new URL(import.meta.url).pathname;
	writeFileSync(path, `#!/bin/sh\nexec '${process.execPath}' '${self}' "$@"\n`);
	chmodSync(path, 0o755);
	return path;
}

function serve(): void {
	const dir = mkdtempSync(join(tmpdir(), "fake-slate-"));
	const path = join(dir, "c.sock");
	const subscribers = new Set<Socket>();
	const server = createServer((socket) => {
		socket.on("error", () => {});
		let buffered = "";
		socket.on("data", (chunk) => {
			buffered += chunk.toString("utf8");
			for (let nl = buffered.indexOf("\n"); nl !== -1; nl = buffered.indexOf("\n")) {
				const line = buffered.slice(0, nl);
				buffered = buffered.slice(nl + 1);
				const { id, method, params } = JSON.parse(line) as { id: number; method: string; params: Record<string, unknown> };
				log({ request: method, params });
				const answer = (body: Record<string, unknown>) => socket.write(`${JSON.stringify({ id, ...body })}\n`);
				switch (method) {
					case "hello":
						answer({
							result: { protocol: 2, server: "slate 0.1.0", parentId: PARENT, cwd: process.cwd(), pid: process.pid, actor: { kind: "operator" } },
						});
						break;
					case "subscribe":
						subscribers.add(socket);
						answer({ result: { subscribed: true } });
						break;
					case "shutdown":
						answer({ result: { shuttingDown: true } });
						setTimeout(() => process.exit(0), 20);
						break;
					case "parentToolStart":
						if (params.tool === "bash" && process.env.FAKE_SLATE_LEASE !== undefined) {
							answer({ error: { code: "writer-lease-held", message: LEASE_REFUSAL } });
						} else {
							answer({ result: { reserved: params.tool !== "read" } });
						}
						break;
					case "parentToolEnd":
						answer({ result: { released: true } });
						break;
					case "tools":
						answer({
							result: {
								tools: ["delegate_task", "delegate_coordinate", "subagent"].map((name) => ({
									name,
									label: name,
									description: `fake ${name}`,
									promptSnippet: `fake ${name}`,
									...(name === "subagent" ? { promptGuidelines: ["use subagent well"] } : {}),
									parameters: { type: "object", properties: { x: { description: "x" } } },
								})),
							},
						});
						break;
					case "callTool": {
						const input = params.input as Record<string, unknown>;
						const background = input.background === true || input.async === true;
						const callId = params.callId;
						const row = { target: `${SNAPSHOT.id}@1`, handle: SNAPSHOT.id.slice(0, 8), role: "scout", status: "running", elapsedMs: 5, line: "● scout 0b6a0000 0.0s" };
						if (!background) {
							socket.write(`${JSON.stringify({ method: "toolUpdate", params: { callId, call: 6, text: row.line, rows: [row] } })}\n`);
							answer({ result: { text: "preview of call 6", details: { call: 6, rows: [row] }, isError: false } });
							break;
						}
						answer({ result: { text: "Accepted 1 task in the background (call 7):", details: { call: 7, rows: [row] }, isError: false, pending: 7 } });
						setTimeout(() => {
							const outcome = { call: 7, request: 2, initiator: "root", delivery: "background", outcomes: [{ ...SNAPSHOT, status: "settled" }] };
							socket.write(`${JSON.stringify({ method: "toolOutcome", params: { callId, call: 7, text: "preview of call 7", details: outcome, rows: [{ ...row, status: "settled" }] } })}\n`);
						}, 50);
						break;
					}
					default:
						answer({ error: { code: "unknown-method", message: `fake slate: no ${method}` } });
				}
			}
		});
	});
	server.listen(path, () => {
		process.stdout.write(`slate serve: parent ${PARENT}\nsocket ${path}\nevents ${dir}/events.jsonl\n`);
	});
	process.stdin.on("end", () => {
		log({ stdin: "eof" });
		process.exit(0);
	});
	process.stdin.resume();
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
	log({ argv, cwd: process.cwd() });
	switch (argv[0]) {
		case "serve":
			if (process.env.FAKE_SLATE_SERVE_FAIL !== undefined) {
				process.stderr.write("error: --pi-session: not a UUID\n");
				process.exit(2);
			}
			serve();
			break;
		case "watch": {
			const row = "● scout 0b6a…@1 running 1s";
			const doc = (width: number, lines: string[]) => `${JSON.stringify({ width, lines })}\n`;
			process.stdout.write(doc(100, [row]));
			let pending = "";
			process.stdin.setEncoding("utf8");
			process.stdin.on("data", (chunk: string) => {
				pending += chunk;
				let newline = pending.indexOf("\n");
				while (newline !== -1) {
					const request = JSON.parse(pending.slice(0, newline)) as { width: number; rows?: number };
					pending = pending.slice(newline + 1);
					newline = pending.indexOf("\n");
					log({ watchRequest: request });
					if (request.width < row.length) {
						process.stdout.write(doc(request.width, []));
						process.exit(0);
					}
					process.stdout.write(doc(request.width, [row]));
				}
			});
			process.stdin.on("end", () => process.exit(0));
			break;
		}
		default:
			process.stdout.write(`ran ${argv.join(" ")}\n`);
			process.exit(argv[0] === "status" && process.env.FAKE_SLATE_FAIL !== undefined ? 3 : 0);
	}
}
