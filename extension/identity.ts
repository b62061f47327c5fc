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
/** A capability is 64 hex digits; a pipe holding more than this is not one. */
export const MAX_CAPABILITY_BYTES = 1024;

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
	const read = readCapability(Number(fdText));
	if (!read.ok) {
		return read;
	}
	if (socket === undefined || socket === "") {
		return fail(`${SOCKET_ENV} is not set, so this pi cannot reach its coordinator`);
	}
	if (!socket.startsWith("/")) {
		return fail(`${SOCKET_ENV}=${JSON.stringify(socket)} is not an absolute path`);
	}
	return { ok: true, identity: { capability: read.capability, socket } };
}

/** Read descriptor `fd` to EOF (at most {@link MAX_CAPABILITY_BYTES}) and close it. */
function readCapability(fd: number): { ok: true; capability: string } | { ok: false; reason: string } {
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
	const buffer = Buffer.alloc(MAX_CAPABILITY_BYTES + 1);
	let length = 0;
	try {
		for (;;) {
			const n = readSync(fd, buffer, length, buffer.length - length, null);
			if (n === 0) {
				break;
			}
			length += n;
			if (length > MAX_CAPABILITY_BYTES) {
				return fail(`descriptor ${fd} holds more than ${MAX_CAPABILITY_BYTES} bytes; not a capability`);
			}
		}
	} catch (error) {
		return fail(`cannot read the capability from descriptor ${fd}: ${(error as Error).message}`);
	} finally {
		try {
			closeSync(fd);
		} catch {
			// Already closed or never open: the read above said why.
		}
	}
	// Surrounding whitespace (a trailing newline) is not part of a capability.
	const capability = buffer.toString("utf8", 0, length).trim();
	if (capability === "") {
		return fail(`descriptor ${fd} held no capability (EOF at once)`);
	}
	return { ok: true, capability };
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
export const identity: IdentityResult | null = isWorker(process.env) ? takeIdentity(process.env) : null;
