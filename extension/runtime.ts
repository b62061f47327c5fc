/**
 * One runtime of the main session: its coordinator process, the operator's client and the
 * outcome subscription, started together at `session_start` and disposed together at
 * `session_shutdown`. A pi reload or session switch makes a new extension instance and with it
 * a new runtime; the old one delivers nothing more.
 */
import { ControlClient, type Endpoint } from "./control.ts";
import { CoordinatorProcess, type ServeOptions } from "./coordinator.ts";
import { OutcomeDelivery, type Send } from "./delivery.ts";

/** How long the `shutdown` request may take before stdin is closed anyway. */
const SHUTDOWN_REQUEST_MS = 10_000;

export interface RuntimeOptions extends ServeOptions {
	/** `hello.client`. */
	client: string;
	/** `hello.extension`, from install.json. */
	extension?: string;
	/** Delivers one window outcome into the session. */
	send: Send;
}

export class Runtime {
	readonly process: CoordinatorProcess;
	readonly client: ControlClient;
	readonly delivery: OutcomeDelivery;
	readonly slate: string;
	private stopping: Promise<void> | undefined;

	private constructor(process: CoordinatorProcess, client: ControlClient, delivery: OutcomeDelivery, slate: string) {
		this.process = process;
		this.client = client;
		this.delivery = delivery;
		this.slate = slate;
	}

	/** The pi session id, which is the coordinator's parent id. */
	get parentId(): string {
		return this.process.served.parentId;
	}

	/** The coordinator's control socket. */
	get socket(): string {
		return this.process.served.socket;
	}

	/** Start (or attach to) the coordinator, connect as the operator and subscribe. */
	static async start(options: RuntimeOptions): Promise<Runtime> {
		const process = await CoordinatorProcess.start(options);
		const endpoint: Endpoint = { socket: process.served.socket, client: options.client };
		if (options.extension !== undefined) {
			endpoint.extension = options.extension;
		}
		const client = new ControlClient(endpoint);
		const delivery = new OutcomeDelivery(endpoint, options.send);
		try {
			// The subscription's hello is the handshake check (protocol, extension hash).
			await delivery.start();
		} catch (error) {
			delivery.dispose();
			await process.stop();
			throw new Error(`the Slate coordinator refused this extension: ${(error as Error).message}`);
		}
		return new Runtime(process, client, delivery, options.slate);
	}

	/**
	 * Deliver nothing more, ask the coordinator to shut down (drain, stop its workers, exit),
	 * close its stdin and wait for it to exit. Idempotent.
	 */
	stop(): Promise<void> {
		this.stopping ??= (async () => {
			this.delivery.dispose();
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
