/**
 * Background window outcomes, delivered into the main session: exactly one custom message per
 * call this extension instance made, after the window drained.
 *
 * One long-lived connection `subscribe`s at session start; the coordinator then sends an
 * `outcome` event (with the model-facing `preview`) when a background or silent window drains.
 * A call is matched by its call number (`admitted.call`), and only calls registered here with
 * {@link OutcomeDelivery.expect} are delivered, each once: the CLI's own background calls on the
 * same coordinator, and calls of an earlier runtime of this session, are not this instance's.
 * An outcome may arrive before the tool call that started the window has read its admission, so
 * unclaimed outcomes are kept briefly (the newest {@link EARLY_KEEP}).
 *
 * How the message wakes the parent:
 * - native `delegate_task` / `delegate_coordinate`: notification only (`triggerTurn: false`);
 * - compatibility `subagent` async: `triggerTurn: true, deliverAs: "followUp"`.
 *
 * Each delivered message is acknowledged with `outcomeDelivered {call}`: the coordinator then
 * records its generations as delivered (`deliveredAt`), which lets the widget collapse them.
 *
 * After {@link OutcomeDelivery.dispose} (session shutdown, reload, switch) nothing more is
 * delivered and the connection is closed.
 */
import { type Endpoint, Connection } from "./control.ts";
import type { Notification, OutcomeEvent } from "./protocol.ts";

export const OUTCOME_MESSAGE_TYPE = "slate-window-outcome";
/** Unclaimed outcomes kept for a call whose admission is still on its way. */
export const EARLY_KEEP = 64;
/** Attempts to subscribe again after the subscription connection was lost. */
const RESUBSCRIBE_ATTEMPTS = 5;

/** How the one message for a call treats the parent's turn. */
export type Wake = "notify" | "followUp";

/** The custom message and its options, as `pi.sendMessage` takes them. */
export interface OutcomeMessage {
	message: { customType: string; content: string; display: boolean; details: unknown };
	options: { triggerTurn: boolean; deliverAs?: "followUp" };
}

export type Send = (message: OutcomeMessage["message"], options: OutcomeMessage["options"]) => void;

/** The message for one drained window. */
export function outcomeMessage(event: OutcomeEvent, wake: Wake): OutcomeMessage {
	return {
		message: { customType: OUTCOME_MESSAGE_TYPE, content: event.preview, display: true, details: event.outcome },
		options: wake === "followUp" ? { triggerTurn: true, deliverAs: "followUp" } : { triggerTurn: false },
	};
}

export class OutcomeDelivery {
	private readonly endpoint: Endpoint;
	private readonly send: Send;
	private readonly expected = new Map<number, Wake>();
	private readonly early = new Map<number, OutcomeEvent>();
	private connection: Connection | undefined;
	private disposed = false;

	constructor(endpoint: Endpoint, send: Send) {
		this.endpoint = endpoint;
		this.send = send;
	}

	/** Subscribe; resolves once the coordinator confirmed (rejects with its refusal). */
	async start(): Promise<void> {
		await this.subscribe();
	}

	/** Deliver call `call`'s outcome once, when (or if already) it arrives. */
	expect(call: number, wake: Wake): void {
		if (this.disposed) {
			return;
		}
		const arrived = this.early.get(call);
		if (arrived !== undefined) {
			this.early.delete(call);
			this.deliver(arrived, wake);
			return;
		}
		this.expected.set(call, wake);
	}

	/** Stop: nothing more is delivered. Idempotent. */
	dispose(): void {
		this.disposed = true;
		this.expected.clear();
		this.early.clear();
		this.connection?.destroy();
		this.connection = undefined;
	}

	private async subscribe(): Promise<void> {
		const connection = new Connection({
			...this.endpoint,
			onNotification: (n) => this.onNotification(n),
		});
		this.connection = connection;
		try {
			await connection.request("subscribe", {});
		} catch (error) {
			connection.destroy();
			throw error;
		}
		void connection.done.then(() => this.onLost(connection));
	}

	private async onLost(lost: Connection): Promise<void> {
		for (let attempt = 1; attempt <= RESUBSCRIBE_ATTEMPTS; attempt++) {
			if (this.disposed || this.connection !== lost) {
				return;
			}
			await new Promise((resolve) => setTimeout(resolve, 100 * attempt).unref());
			if (this.disposed) {
				return;
			}
			try {
				await this.subscribe();
				return;
			} catch {
				// The coordinator is gone or going: try again, then give up.
			}
		}
	}

	private onNotification(notification: Notification): void {
		if (this.disposed || notification.method !== "event" || notification.params.kind !== "outcome") {
			return;
		}
		const event = notification.params;
		const call = event.outcome?.call;
		if (typeof call !== "number" || typeof event.preview !== "string") {
			return;
		}
		const wake = this.expected.get(call);
		if (wake !== undefined) {
			this.expected.delete(call);
			this.deliver(event, wake);
			return;
		}
		this.early.set(call, event);
		if (this.early.size > EARLY_KEEP) {
			const oldest = this.early.keys().next().value as number;
			this.early.delete(oldest);
		}
	}

	private deliver(event: OutcomeEvent, wake: Wake): void {
		const { message, options } = outcomeMessage(event, wake);
		this.send(message, options);
		// It is in the session now: the coordinator marks those generations delivered (the
		// widget collapses them). A lost answer only leaves them shown.
		const call = event.outcome.call;
		this.connection?.request("outcomeDelivered", { call }).catch(() => {});
	}
}
