/**
 * Who this pi process is: the worker generation's secret capability and Slate's control socket.
 *
 * Slate starts pi with the capability on a pipe, file descriptor `SLATE_CAPABILITY_FD` (3): the
 * capability bytes, then EOF. It is never in the environment, argv or a file. This module takes
 * it once, when pi first loads the extension, before any tool can run: it reads the pipe to EOF,
 * closes the descriptor and deletes `SLATE_CAPABILITY_FD` from `process.env`, so the model's
 * `bash` (which inherits pi's environment and open descriptors) finds neither. A pi `new_session`
 * re-runs the extension's factory but not this module, so the identity outlives it.
 * `SLATE_SOCKET` stays in the environment: it is not secret, and `slate` typed into the worker's
 * bash uses it to reach the coordinator (which attributes it by process ancestry).
 *
 * The variable alone decides the role: set, this pi is a worker; unset, it is the user's main
 * session (`main_session.ts`). A worker without a readable identity fails closed: `index.ts`
 * throws from its factory, pi exits 1 at startup with the reason on stderr, and Slate reports a
 * worker setup failure. A pi running with no coordinator to ask would have no request or tool
 * budget at all.
 */
import { closeSync, fstatSync, readSync } from "node:fs";

export const CAPABILITY_FD_ENV = "SLATE_CAPABILITY_FD";
export const SOCKET_ENV = "SLATE_SOCKET";
/** Set in a pre-started (pooled) process: the descriptor then holds nothing until it is bound. */
export const POOLED_ENV = "SLATE_WORKER_POOLED";
/** A capability is 64 hex digits; a pipe holding more than this is not one. */
export const MAX_CAPABILITY_BYTES = 1024;
/** A pooled process's binding: the capability, the system prompt and the tool names. */
export const MAX_BINDING_BYTES = 4 * 1024 * 1024;

export interface Identity {
	readonly capability: string;
	readonly socket: string;
}

export type IdentityResult =
	| { readonly ok: true; readonly identity: Identity }
	| { readonly ok: false; readonly reason: string };

type Env = Record<string, string | undefined>;

/**
 * Take the identity out of `env` (and the descriptor it names): afterwards `env` has no
 * `SLATE_CAPABILITY_FD` and the descriptor is closed, whether or not an identity was found.
 */
export function takeIdentity(env: Env): IdentityResult {
	const fdText = env[CAPABILITY_FD_ENV];
	delete env[CAPABILITY_FD_ENV];
	const socket = env[SOCKET_ENV];
	if (fdText === undefined) {
		return fail(`${CAPABILITY_FD_ENV} is not set, so this pi has no worker capability`);
	}
	if (!/^[0-9]+$/.test(fdText) || Number(fdText) < 3) {
		return fail(`${CAPABILITY_FD_ENV}=${JSON.stringify(fdText)} is not a descriptor number of 3 or more`);
	}
	// The descriptor is read (and closed) whatever the socket says: nothing is left for bash.
	const read = readPipe(Number(fdText), MAX_CAPABILITY_BYTES);
	if (!read.ok) {
		return read;
	}
	const socketProblem = checkSocket(socket);
	if (socketProblem !== null) {
		return fail(socketProblem);
	}
	// Surrounding whitespace (a trailing newline) is not part of a capability.
	const capability = read.text.trim();
	if (capability === "") {
		return fail(`descriptor ${fdText} held no capability (EOF at once)`);
	}
	return { ok: true, identity: { capability, socket: socket as string } };
}

function checkSocket(socket: string | undefined): string | null {
	if (socket === undefined || socket === "") {
		return `${SOCKET_ENV} is not set, so this pi cannot reach its coordinator`;
	}
	if (!socket.startsWith("/")) {
		return `${SOCKET_ENV}=${JSON.stringify(socket)} is not an absolute path`;
	}
	return null;
}

/** A pooled process before it is bound: where its binding will be, and its coordinator. */
export interface Pending {
	readonly fd: number;
	readonly socket: string;
}

/** What a pooled process becomes when it is bound (`src/runtime/backend.rs`, `pooled_binding`). */
export interface Binding {
	readonly identity: Identity;
	/** The worker's system prompt, given to pi before every run. */
	readonly systemPrompt: string;
	/** The worker's active tools (pi's `--tools` names every tool a worker could have). */
	readonly tools: readonly string[];
}

/**
 * Take a pooled process's descriptor number and socket out of `env` (as {@link takeIdentity},
 * nothing is left for the model's `bash`), without reading: the coordinator writes the binding
 * only when it binds this process to a generation.
 */
export function takePending(env: Env): { ok: true; pending: Pending } | { ok: false; reason: string } {
	const fdText = env[CAPABILITY_FD_ENV];
	delete env[CAPABILITY_FD_ENV];
	delete env[POOLED_ENV];
	if (fdText === undefined || !/^[0-9]+$/.test(fdText) || Number(fdText) < 3) {
		return fail(`a pooled worker needs ${CAPABILITY_FD_ENV} naming a descriptor of 3 or more`);
	}
	const socket = env[SOCKET_ENV];
	const socketProblem = checkSocket(socket);
	if (socketProblem !== null) {
		return fail(socketProblem);
	}
	return { ok: true, pending: { fd: Number(fdText), socket: socket as string } };
}

/** Read the binding the coordinator wrote to a pooled process's descriptor, then closed. */
export function takeBinding(pending: Pending): { ok: true; binding: Binding } | { ok: false; reason: string } {
	const read = readPipe(pending.fd, MAX_BINDING_BYTES);
	if (!read.ok) {
		return read;
	}
	let value: unknown;
	try {
		value = JSON.parse(read.text);
	} catch (error) {
		return fail(`the binding on descriptor ${pending.fd} is not JSON: ${(error as Error).message}`);
	}
	const binding = value as { capability?: unknown; systemPrompt?: unknown; tools?: unknown } | null;
	if (
		typeof binding?.capability !== "string" ||
		binding.capability === "" ||
		binding.capability.length > MAX_CAPABILITY_BYTES ||
		typeof binding.systemPrompt !== "string" ||
		!Array.isArray(binding.tools) ||
		!binding.tools.every((tool) => typeof tool === "string")
	) {
		return fail(`the binding on descriptor ${pending.fd} is not {capability, systemPrompt, tools}`);
	}
	return {
		ok: true,
		binding: {
			identity: { capability: binding.capability, socket: pending.socket },
			systemPrompt: binding.systemPrompt,
			tools: binding.tools as string[],
		},
	};
}

/** Read descriptor `fd` to EOF (at most `max` bytes) and close it. */
function readPipe(fd: number, max: number): { ok: true; text: string } | { ok: false; reason: string } {
	// Only a pipe or socket can be Slate's. Without an inherited fd 3, Node's own event loop holds
	// that number (an epoll descriptor): reading or closing it would break pi, so it is left alone.
	try {
		const stat = fstatSync(fd);
		if (!stat.isFIFO() && !stat.isSocket()) {
			return fail(`descriptor ${fd} is not a pipe, so it is not Slate's capability pipe`);
		}
	} catch (error) {
		return fail(`descriptor ${fd} is not open: ${(error as Error).message}`);
	}
	const buffer = Buffer.alloc(64 * 1024);
	const chunks: Buffer[] = [];
	let length = 0;
	try {
		for (;;) {
			const n = readSync(fd, buffer, 0, buffer.length, null);
			if (n === 0) {
				break;
			}
			length += n;
			if (length > max) {
				return fail(`descriptor ${fd} holds more than ${max} bytes; it is not from Slate`);
			}
			chunks.push(Buffer.from(buffer.subarray(0, n)));
		}
	} catch (error) {
		return fail(`cannot read descriptor ${fd}: ${(error as Error).message}`);
	} finally {
		try {
			closeSync(fd);
		} catch {
			// Already closed or never open: the read above said why.
		}
	}
	return { ok: true, text: Buffer.concat(chunks).toString("utf8") };
}

function fail(reason: string): { ok: false; reason: string } {
	return { ok: false, reason };
}

/**
 * Whether this pi is one of Slate's workers: exactly when `SLATE_CAPABILITY_FD` is set (the
 * role is decided by that alone; a worker whose identity then cannot be read fails closed).
 */
export function isWorker(env: Env): boolean {
	return env[CAPABILITY_FD_ENV] !== undefined;
}

/**
 * This process's identity, taken at module load (see the module docs); `null` when this pi is
 * not a worker (the extension then runs in the user's main session).
 */
export const identity: IdentityResult | null = isPooled(process.env)
	? { ok: false, reason: "a pre-started Slate worker must load worker_entry.ts, which waits to be bound" }
	: isWorker(process.env)
		? takeIdentity(process.env)
		: null;

/** Whether this pi was pre-started by Slate's pool (`src/worker/pi/pool.rs`) and waits to be bound. */
export function isPooled(env: Env): boolean {
	return env[POOLED_ENV] === "1" && env[CAPABILITY_FD_ENV] !== undefined;
}
