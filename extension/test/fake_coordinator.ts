/**
 * A tiny stand-in for Slate's control socket, for the extension's tests: newline-JSON over a
 * Unix socket, `hello` first, every request answered by a handler the test supplies.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Received {
	connection: number;
	id: unknown;
	method: string;
	params: unknown;
}

/** A handler's answer: a result, an error object, or nothing yet (the request stays pending). */
export type Answer = { result: unknown } | { error: { code: string; message: string; data?: unknown } } | "hold";

export type Handler = (request: Received) => Answer | Promise<Answer>;

export const CAPABILITY = "c0ffee".repeat(10) + "abcd";

/**
 * Answers `hello` for {@link CAPABILITY} (a child) or without a capability (the operator);
 * everything else goes to the handler.
 */
export class FakeCoordinator {
	readonly path: string;
	readonly received: Received[] = [];
	/** Connection numbers whose socket closed, in order. */
	readonly closed: number[] = [];
	private readonly dir: string;
	private readonly server: Server;
	private readonly sockets = new Map<number, Socket>();
	private connections = 0;
	handler: Handler;

	constructor(handler: Handler) {
		this.handler = handler;
		this.dir = mkdtempSync(join(tmpdir(), "slate-ext-"));
		this.path = join(this.dir, "c.sock");
		this.server = createServer((socket) => this.serve(socket));
	}

	listen(): Promise<this> {
		return new Promise((resolve, reject) => {
			this.server.once("error", reject);
			this.server.listen(this.path, () => resolve(this));
		});
	}

	get connectionCount(): number {
		return this.connections;
	}

	/** Wait until `predicate` holds (polling every millisecond, at most `ms`). */
	async until(predicate: () => boolean, ms = 2000): Promise<void> {
		const end = Date.now() + ms;
		while (!predicate()) {
			if (Date.now() > end) {
				throw new Error("fake coordinator: condition not reached in time");
			}
			await new Promise((r) => setTimeout(r, 1));
		}
	}

	/** Answer request `id` on `connection` by hand (for requests a handler held). */
	answer(connection: number, id: unknown, answer: Exclude<Answer, "hold">): void {
		const socket = this.sockets.get(connection);
		if (socket !== undefined) {
			reply(socket, id, answer);
		}
	}

	/** Send a notification (`{method, params}`, no id) on `connection`. */
	notify(connection: number, method: string, params: unknown): void {
		const socket = this.sockets.get(connection);
		if (socket !== undefined && !socket.destroyed) {
			socket.write(`${JSON.stringify({ method, params })}\n`);
		}
	}

	/** Close `connection` from the server's side. */
	drop(connection: number): void {
		this.sockets.get(connection)?.destroy();
	}

	async stop(): Promise<void> {
		for (const s of this.sockets.values()) {
			s.destroy();
		}
		await new Promise<void>((resolve) => this.server.close(() => resolve()));
		rmSync(this.dir, { recursive: true, force: true });
	}

	private serve(socket: Socket): void {
		const connection = ++this.connections;
		this.sockets.set(connection, socket);
		socket.on("close", () => {
			this.sockets.delete(connection);
			this.closed.push(connection);
		});
		socket.on("error", () => {});
		let buffered = "";
		let helloDone = false;
		socket.on("data", (chunk) => {
			buffered += chunk.toString("utf8");
			let newline = buffered.indexOf("\n");
			while (newline !== -1) {
				const line = buffered.slice(0, newline);
				buffered = buffered.slice(newline + 1);
				newline = buffered.indexOf("\n");
				const request = JSON.parse(line) as { id: unknown; method: string; params: unknown };
				const received: Received = { connection, ...request };
				this.received.push(received);
				if (!helloDone) {
					const params = request.params as { capability?: string; protocols?: number[] };
					if (request.method !== "hello") {
						reply(socket, request.id, { error: { code: "hello-required", message: "hello first" } });
					} else if (params.capability !== undefined && params.capability !== CAPABILITY) {
						reply(socket, request.id, {
							error: {
								code: "capability-refused",
								message: "hello.capability: not the capability of a live worker generation of this coordinator",
							},
						});
					} else {
						helloDone = true;
						reply(socket, request.id, {
							result: {
								protocol: 2,
								server: "slate 0.1.0",
								parentId: "6f1c0000-0000-4000-8000-000000000000",
								cwd: "/",
								pid: process.pid,
								actor:
									params.capability === undefined
										? { kind: "operator" }
										: { kind: "child", target: "0b6a0000-0000-4000-8000-000000000000@1" },
							},
						});
					}
					continue;
				}
				void Promise.resolve(this.handler(received)).then((answer) => {
					if (answer !== "hold") {
						reply(socket, request.id, answer);
					}
				});
			}
		});
	}
}

function reply(socket: Socket, id: unknown, answer: Exclude<Answer, "hold">): void {
	if (!socket.destroyed) {
		socket.write(`${JSON.stringify({ id, ...answer })}\n`);
	}
}
