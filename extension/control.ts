/**
 * A client of Slate's control socket: newline-delimited JSON over a Unix socket, protocol 2.
 *
 * Each connection starts with `hello` (a worker's capability, so it speaks as that generation;
 * none in the main session, which speaks as the operator), then carries requests matched to
 * responses by `id` (responses arrive in completion order). Notifications (no `id`) go to the
 * endpoint's `onNotification`, if any (only a connection that called `subscribe` gets them). An `error` answer becomes a {@link ControlError} whose message is the
 * coordinator's, verbatim; a socket that cannot be reached or is lost becomes an
 * {@link UnreachableError}. Nothing is retried here: callers decide (the guards deny).
 *
 * {@link ControlClient.call} uses one persistent connection, opened on first use and again after
 * it is lost, for the short calls (guards, `submit`, `message`, `inbox`): a guard costs one round
 * trip on an open socket. {@link ControlClient.callOnce} opens a connection for one long call
 * (`delegate`, `wait`) and destroys it when the call's abort signal fires, which tells the
 * coordinator the caller is gone. An idle persistent socket is `unref`'d, so it never keeps
 * pi's process alive.
 */
import { connect, type Socket } from "node:net";

import {
	type HelloParams,
	type Method,
	type Notification,
	type Params,
	PROTOCOL_VERSION,
	type Result,
	type WireError,
} from "./protocol.ts";

/** Slate's server refuses longer request lines; the client refuses them before sending. */
export const REQUEST_LINE_MAX = 1_048_576;
/** Slate never sends a longer line; a longer one ends the connection. */
export const SERVER_LINE_MAX = 16 * 1024 * 1024;
/** How long a short call may wait for its answer (the guards then deny). */
export const CALL_TIMEOUT_MS = 30_000;

/** Where the coordinator is and who this client is. */
export interface Endpoint {
	socket: string;
	/** A worker generation's capability; absent for the operator (the user's main session). */
	capability?: string;
	/** `hello.client`, e.g. `"slate-pi-extension 0.1.0"`. */
	client: string;
	/** `hello.extension`: the installed extension's content hash (`install.json`), if known. */
	extension?: string;
	/** Called with each notification (`{method, params}`) this connection receives. */
	onNotification?: (notification: Notification) => void;
}

/** An error answer of the coordinator; `message` is its text, unchanged. */
export class ControlError extends Error {
	readonly code: string;
	readonly data: unknown;

	constructor(wire: WireError) {
		super(wire.message);
		this.name = "ControlError";
		this.code = wire.code;
		this.data = wire.data;
	}
}

/** The socket could not be reached, or closed before the answer came. */
export class UnreachableError extends Error {
	constructor(message: string) {
		super(message);
		this.name = "UnreachableError";
	}
}

interface Pending {
	resolve(result: unknown): void;
	reject(error: Error): void;
	timer: ReturnType<typeof setTimeout> | undefined;
}

/** One socket: `hello` first, then requests multiplexed by id. */
export class Connection {
	/** Settles once `hello` is answered; rejects (and the connection is closed) if it fails. */
	readonly ready: Promise<void>;
	private readonly socket: Socket;
	private readonly pending = new Map<number, Pending>();
	private nextId = 1;
	private partial: Buffer[] = [];
	private partialBytes = 0;
	private failure: Error | undefined;
	private readonly endpoint: Endpoint;
	private settleDone: (error: Error) => void = () => {};
	/** Settles with the reason once the connection is closed or lost (never rejects). */
	readonly done: Promise<Error> = new Promise((resolve) => {
		this.settleDone = resolve;
	});

	constructor(endpoint: Endpoint) {
		this.endpoint = endpoint;
		this.socket = connect({ path: endpoint.socket });
		this.socket.on("data", (chunk: Buffer) => this.onData(chunk));
		this.socket.on("error", (error: Error) => {
			this.destroy(
				new UnreachableError(
					`cannot reach the Slate coordinator at ${endpoint.socket}: ${error.message}`,
				),
			);
		});
		this.socket.on("close", () => {
			this.destroy(
				new UnreachableError(
					`the Slate coordinator at ${endpoint.socket} closed the connection`,
				),
			);
		});
		this.ready = this.hello();
		// Awaited by every caller; this only keeps an unawaited failure from being "unhandled".
		this.ready.catch(() => {});
	}

	/** Whether the connection failed or was closed (then it is never usable again). */
	get closed(): boolean {
		return this.failure !== undefined;
	}

	/** Send `method` once `hello` succeeded; `timeoutMs` bounds the wait for its answer. */
	async request<M extends Method>(
		method: M,
		params: Params<M>,
		timeoutMs?: number,
	): Promise<Result<M>> {
		await this.ready;
		return this.send(method, params, timeoutMs);
	}

	/** Close the socket; calls still waiting fail with `error`. */
	destroy(error: Error = new UnreachableError("connection closed by the extension")): void {
		if (this.failure !== undefined) {
			return;
		}
		this.failure = error;
		this.socket.destroy();
		this.settleDone(error);
		const waiting = [...this.pending.values()];
		this.pending.clear();
		for (const p of waiting) {
			clearTimeout(p.timer);
			p.reject(error);
		}
	}

	private async hello(): Promise<void> {
		const result = await this.send("hello", helloParams(this.endpoint), CALL_TIMEOUT_MS).catch((error: Error) => {
			this.destroy(error);
			throw error;
		});
		if (result.protocol !== PROTOCOL_VERSION) {
			const error = new UnreachableError(
				`the Slate coordinator at ${this.endpoint.socket} speaks protocol ${result.protocol}, not ${PROTOCOL_VERSION}`,
			);
			this.destroy(error);
			throw error;
		}
	}

	private send<M extends Method>(
		method: M,
		params: Params<M>,
		timeoutMs: number | undefined,
	): Promise<Result<M>> {
		if (this.failure !== undefined) {
			return Promise.reject(this.failure);
		}
		const id = this.nextId++;
		// `id` first: the server can answer a refused line under its id (docs/protocol.md).
		const line = `${JSON.stringify({ id, method, params })}\n`;
		const bytes = Buffer.byteLength(line) - 1;
		if (bytes > REQUEST_LINE_MAX) {
			return Promise.reject(
				new ControlError({
					code: "line-too-long",
					message: `${method}: the request is ${bytes} bytes; the control socket takes at most ${REQUEST_LINE_MAX}`,
					data: { max: REQUEST_LINE_MAX, bytes },
				}),
			);
		}
		return new Promise<Result<M>>((resolve, reject) => {
			const timer =
				timeoutMs === undefined
					? undefined
					: setTimeout(() => {
							this.pending.delete(id);
							this.refWhileWaiting();
							reject(
								new UnreachableError(
									`${method}: no answer from the Slate coordinator within ${timeoutMs} ms`,
								),
							);
						}, timeoutMs);
			this.pending.set(id, {
				resolve: (result) => resolve(result as Result<M>),
				reject,
				timer,
			});
			this.refWhileWaiting();
			this.socket.write(line);
		});
	}

	/** Keep the process alive only while an answer is awaited. */
	private refWhileWaiting(): void {
		if (this.pending.size > 0) {
			this.socket.ref();
		} else {
			this.socket.unref();
		}
	}

	private onData(chunk: Buffer): void {
		let start = 0;
		for (;;) {
			const newline = chunk.indexOf(0x0a, start);
			if (newline === -1) {
				break;
			}
			this.partial.push(chunk.subarray(start, newline));
			const line = Buffer.concat(this.partial).toString("utf8");
			this.partial = [];
			this.partialBytes = 0;
			start = newline + 1;
			this.onLine(line);
			if (this.failure !== undefined) {
				return;
			}
		}
		if (start < chunk.length) {
			this.partial.push(chunk.subarray(start));
			this.partialBytes += chunk.length - start;
			if (this.partialBytes > SERVER_LINE_MAX) {
				this.destroy(
					new UnreachableError(
						`the Slate coordinator at ${this.endpoint.socket} sent a line over ${SERVER_LINE_MAX} bytes`,
					),
				);
			}
		}
	}

	private onLine(line: string): void {
		if (line.trim() === "") {
			return;
		}
		let message: unknown;
		try {
			message = JSON.parse(line);
		} catch {
			this.destroy(
				new UnreachableError(
					`the Slate coordinator at ${this.endpoint.socket} sent a line that is not JSON`,
				),
			);
			return;
		}
		if (!isObject(message)) {
			return;
		}
		if (!("id" in message)) {
			if (typeof message.method === "string") {
				this.endpoint.onNotification?.(message as unknown as Notification);
			}
			return;
		}
		const { id } = message;
		const error = isWireError(message.error) ? new ControlError(message.error) : undefined;
		if (id === null && error !== undefined) {
			// An error the server could not tie to a request answers every call waiting now.
			const waiting = [...this.pending.values()];
			this.pending.clear();
			this.refWhileWaiting();
			for (const p of waiting) {
				clearTimeout(p.timer);
				p.reject(error);
			}
			return;
		}
		const pending = typeof id === "number" ? this.pending.get(id) : undefined;
		if (pending === undefined) {
			return; // the answer to a call that timed out
		}
		this.pending.delete(id as number);
		this.refWhileWaiting();
		clearTimeout(pending.timer);
		if (error !== undefined) {
			pending.reject(error);
		} else if ("result" in message) {
			pending.resolve(message.result);
		} else {
			pending.reject(
				new UnreachableError(`the Slate coordinator answered request ${id} with neither result nor error`),
			);
		}
	}
}

/** The worker's client: one persistent connection for short calls, one per long call. */
export class ControlClient {
	private persistent: Connection | undefined;
	private readonly endpoint: Endpoint;
	private readonly timeoutMs: number;

	constructor(endpoint: Endpoint, timeoutMs: number = CALL_TIMEOUT_MS) {
		this.endpoint = endpoint;
		this.timeoutMs = timeoutMs;
	}

	/** A short call on the persistent connection (reopened if it was lost). */
	call<M extends Method>(method: M, params: Params<M>): Promise<Result<M>> {
		if (this.persistent === undefined || this.persistent.closed) {
			this.persistent = new Connection(this.endpoint);
		}
		return this.persistent.request(method, params, this.timeoutMs);
	}

	/**
	 * A long call on its own connection, closed when the answer comes. If `signal` aborts first,
	 * the socket is destroyed at once (the coordinator sees the caller go) and the call fails.
	 */
	async callOnce<M extends Method>(
		method: M,
		params: Params<M>,
		signal?: AbortSignal,
	): Promise<Result<M>> {
		if (signal?.aborted) {
			throw abortError(method);
		}
		const connection = new Connection(this.endpoint);
		const onAbort = () => connection.destroy(abortError(method));
		signal?.addEventListener("abort", onAbort, { once: true });
		try {
			return await connection.request(method, params);
		} finally {
			signal?.removeEventListener("abort", onAbort);
			connection.destroy();
		}
	}

	/** Close the persistent connection (pi's session is shutting down). */
	close(): void {
		this.persistent?.destroy();
		this.persistent = undefined;
	}
}

/** `hello`'s params: only the members this endpoint has (absent, not `null`). */
export function helloParams(endpoint: Endpoint): HelloParams {
	const client = endpoint.extension === undefined ? endpoint.client : { name: endpoint.client, extension: endpoint.extension };
	const params: HelloParams = { protocols: [PROTOCOL_VERSION], client };
	if (endpoint.capability !== undefined) {
		params.capability = endpoint.capability;
	}
	return params;
}

function abortError(method: string): Error {
	const error = new Error(`${method}: cancelled (the tool call was aborted)`);
	error.name = "AbortError";
	return error;
}

function isObject(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isWireError(value: unknown): value is WireError {
	return isObject(value) && typeof value.code === "string" && typeof value.message === "string";
}
