/**
 * The main session's coordinator process: `slate serve --pi-session <id>` for this pi session.
 *
 * Started at `session_start` with stdin a pipe that is kept open and never written: its EOF (the
 * extension closes it at shutdown, or pi died, even by SIGKILL) tells the coordinator its session
 * is gone, and it stops every worker and exits. stdout's first lines name the coordinator
 * (`slate serve: parent <id>`, `socket <path>`, `events <path>`); the rest is drained and
 * dropped. stderr is kept (its last 8 KB) for error messages. When a coordinator already serves
 * this session (a reload, a second pi on the same session), `serve` prints the same lines for it
 * and exits 0: the extension then attaches to that one.
 *
 * Nothing here keeps pi's process alive: the child and its pipes are `unref`'d.
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { Socket } from "node:net";

/** How long `serve` may take to name its socket. */
export const START_TIMEOUT_MS = 20_000;
/** How long shutdown waits for the process to exit after its stdin is closed. */
export const EXIT_TIMEOUT_MS = 10_000;
const STDERR_KEEP = 8 * 1024;

export interface ServeOptions {
	slate: string;
	sessionId: string;
	/** pi's session directory (the directory of the session file). */
	sessionDir: string;
	/** pi's version, for the coordinator's host gate. */
	hostVersion: string;
	cwd: string;
}

/** The argv of `slate serve` for this session (interfaces §3). */
export function serveArgs(options: ServeOptions): string[] {
	return [
		"serve",
		"--pi-session",
		options.sessionId,
		"--session-dir",
		options.sessionDir,
		"--host-version",
		options.hostVersion,
	];
}

/** What `serve`'s first lines said. */
export interface Served {
	parentId: string;
	socket: string;
	events: string;
}

/** A running (or attached-to) coordinator. */
export class CoordinatorProcess {
	readonly served: Served;
	private readonly child: ChildProcess;
	private readonly stderr: { text: string };
	private readonly exited: Promise<number | null>;

	private constructor(child: ChildProcess, served: Served, stderr: { text: string }, exited: Promise<number | null>) {
		this.child = child;
		this.served = served;
		this.stderr = stderr;
		this.exited = exited;
	}

	/** Spawn `serve` and wait until it names its socket (or fails, with its stderr). */
	static start(options: ServeOptions, timeoutMs = START_TIMEOUT_MS): Promise<CoordinatorProcess> {
		const child = spawn(options.slate, serveArgs(options), {
			cwd: options.cwd,
			stdio: ["pipe", "pipe", "pipe"],
		});
		const stderr = { text: "" };
		child.stderr?.setEncoding("utf8");
		child.stderr?.on("data", (chunk: string) => {
			stderr.text = (stderr.text + chunk).slice(-STDERR_KEEP);
		});
		// The coordinator may exit before reading anything; a write error there is not ours.
		child.stdin?.on("error", () => {});
		const exited = new Promise<number | null>((resolve) => {
			child.once("close", (code) => resolve(code));
			child.once("error", () => resolve(null));
		});
		return new Promise((resolve, reject) => {
			const lines: string[] = [];
			let partial = "";
			let settled = false;
			const fail = (why: string) => {
				if (settled) {
					return;
				}
				settled = true;
				clearTimeout(timer);
				child.kill("SIGTERM");
				const tail = stderr.text.trim();
				reject(new Error(tail === "" ? why : `${why}: ${tail}`));
			};
			const timer = setTimeout(
				() => fail(`\`${options.slate} serve\` did not name its socket within ${timeoutMs} ms`),
				timeoutMs,
			);
			child.once("error", (error) => fail(`cannot run ${options.slate}: ${error.message}`));
			child.once("close", (code, signal) => {
				// Wait for stderr to be read whole before reporting.
				setImmediate(() => fail(`\`${options.slate} serve\` exited (${signal ?? `code ${code}`}) before naming its socket`));
			});
			child.stdout?.setEncoding("utf8");
			child.stdout?.on("data", (chunk: string) => {
				if (settled) {
					return; // drained and dropped
				}
				partial += chunk;
				let newline = partial.indexOf("\n");
				while (newline !== -1) {
					lines.push(partial.slice(0, newline));
					partial = partial.slice(newline + 1);
					newline = partial.indexOf("\n");
				}
				if (lines.length < 3) {
					return;
				}
				const served = parseServed(lines);
				if (!served.ok) {
					fail(served.reason);
					return;
				}
				settled = true;
				clearTimeout(timer);
				unrefAll(child);
				resolve(new CoordinatorProcess(child, served.served, stderr, exited));
			});
		});
	}

	/** The last lines `serve` wrote to stderr. */
	get stderrTail(): string {
		return this.stderr.text;
	}

	/**
	 * Close stdin (the coordinator then drains, stops its workers and exits) and wait for the
	 * process to end, at most `timeoutMs`; then it is killed. Send `shutdown` first for a drain
	 * that answers in-flight requests. Idempotent.
	 */
	async stop(timeoutMs = EXIT_TIMEOUT_MS): Promise<void> {
		this.child.stdin?.end();
		let timer: ReturnType<typeof setTimeout> | undefined;
		const timedOut = new Promise<"timeout">((resolve) => {
			timer = setTimeout(() => resolve("timeout"), timeoutMs);
		});
		const result = await Promise.race([this.exited, timedOut]);
		clearTimeout(timer);
		if (result === "timeout") {
			this.child.kill("SIGKILL");
		}
	}
}

/** Read `slate serve: parent <id>`, `socket <path>`, `events <path>`. */
export function parseServed(lines: string[]): { ok: true; served: Served } | { ok: false; reason: string } {
	const [first, second, third] = lines;
	const parent = /^slate serve: parent (\S+)$/.exec(first ?? "");
	const socket = /^\s*socket (\/.+)$/.exec(second ?? "");
	const events = /^\s*events (\/.+)$/.exec(third ?? "");
	if (parent === null || socket === null || events === null) {
		return {
			ok: false,
			reason: `\`slate serve\` printed ${JSON.stringify(lines.slice(0, 3).join("\n"))}, not its parent, socket and events lines`,
		};
	}
	return { ok: true, served: { parentId: parent[1], socket: socket[1], events: events[1] } };
}

function unrefAll(child: ChildProcess): void {
	child.unref();
	for (const stream of [child.stdin, child.stdout, child.stderr]) {
		(stream as unknown as Socket | null)?.unref?.();
	}
}
