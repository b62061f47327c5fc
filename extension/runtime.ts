/**
 * One runtime of the main session: its coordinator process, the operator's client and the
 * root's tools as the coordinator lists them, started together at `session_start` and disposed
 * together at `session_shutdown` (with every background tool call still waiting for its
 * outcome). A pi reload or session switch makes a new extension instance and with it a new
 * runtime; the old one delivers nothing more.
 */
import { type Connection, ControlClient, type Endpoint } from "./control.ts";
import { CoordinatorProcess, type ServeOptions } from "./coordinator.ts";
import type { ToolSpec } from "./protocol.ts";

/** How long the `shutdown` request may take before stdin is closed anyway. */
const SHUTDOWN_REQUEST_MS = 10_000;

export interface RuntimeOptions extends ServeOptions {
	/** `hello.client`. */
	client: string;
	/** `hello.extension`, from install.json. */
	extension?: string;
}

export class Runtime {
	readonly process: CoordinatorProcess;
	readonly client: ControlClient;
	/** Where each tool call opens its own connection, as the operator. */
	readonly endpoint: Endpoint;
	/** The root's tools, as the coordinator lists them. */
	readonly tools: ToolSpec[];
	readonly slate: string;
	/** Background tool calls waiting for their outcome; closed with the runtime. */
	private readonly waiting = new Set<Connection>();
	private stopping: Promise<void> | undefined;

	private constructor(
		process: CoordinatorProcess,
		client: ControlClient,
		endpoint: Endpoint,
		tools: ToolSpec[],
		slate: string,
	) {
		this.process = process;
		this.client = client;
		this.endpoint = endpoint;
		this.tools = tools;
		this.slate = slate;
	}

	/** Keep `connection` (a background call's) until it closes or the runtime stops. */
	track(connection: Connection): void {
		if (this.stopping !== undefined) {
			connection.destroy();
			return;
		}
		this.waiting.add(connection);
		void connection.done.then(() => this.waiting.delete(connection));
	}

	/** The pi session id, which is the coordinator's parent id. */
	get parentId(): string {
		return this.process.served.parentId;
	}

	/** The coordinator's control socket. */
	get socket(): string {
		return this.process.served.socket;
	}

	/** Start (or attach to) the coordinator, connect as the operator and read the root's tools. */
	static async start(options: RuntimeOptions): Promise<Runtime> {
		const process = await CoordinatorProcess.start(options);
		const endpoint: Endpoint = { socket: process.served.socket, client: options.client };
		if (options.extension !== undefined) {
			endpoint.extension = options.extension;
		}
		const client = new ControlClient(endpoint);
		let tools: ToolSpec[];
		try {
			// Its hello is the handshake check (protocol, extension hash).
			tools = (await client.call("tools", {})).tools;
		} catch (error) {
			client.close();
			await process.stop();
			throw new Error(`the Slate coordinator refused this extension: ${(error as Error).message}`);
		}
		return new Runtime(process, client, endpoint, tools, options.slate);
	}

	/**
	 * Deliver nothing more, ask the coordinator to shut down (drain, stop its workers, exit),
	 * close its stdin and wait for it to exit. Idempotent.
	 */
	stop(): Promise<void> {
		this.stopping ??= (async () => {
			for (const connection of this.waiting) {
				connection.destroy();
			}
			this.waiting.clear();
			try {
				await Promise.race([
					this.client.call("shutdown", {}),
					new Promise((resolve) => setTimeout(resolve, SHUTDOWN_REQUEST_MS).unref()),
				]);
			} catch {
				// Gone already, or shutting down: closing stdin below ends it either way.
			}
			this.client.close();
			await this.process.stop();
		})();
		return this.stopping;
	}
}
