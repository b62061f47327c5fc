/**
 * The parent mutation reservation ([Writer coordination]): the main session's own tool calls
 * reserve before they run and release when they finalize, so a writer child and the parent
 * never mutate the workspace at once.
 *
 * - `tool_call` (preflight, after pi validated the arguments, before the tool runs):
 *   `parentToolStart {callId, tool}`. The coordinator classifies the tool (the read-only
 *   builtins and Slate's own delegation tools are exempt) and refuses while a child holds the
 *   writer lease; the refusal's message, verbatim, is the block reason the model reads.
 * - `tool_execution_end` (fires for blocked calls too): `parentToolEnd {callId}`; releasing a
 *   call that reserved nothing is harmless, so every call is released.
 *
 * Without a coordinator (it never started, or it is gone) there are no children and no lease,
 * so the call goes ahead. Any other failure to get an answer (a timeout, an unreadable answer)
 * blocks: a reservation that cannot be confirmed is not assumed.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import { type ControlClient, ControlError, UnreachableError } from "./control.ts";

/** The client of the session's coordinator, or why there is none. */
export type ClientLookup = () => Promise<{ ok: true; client: ControlClient } | { ok: false; reason: string }>;

export type Preflight = { allow: true } | { allow: false; reason: string };

/** Ask the coordinator to reserve `callId` of `tool`. */
export async function reserve(lookup: ClientLookup, callId: string, tool: string): Promise<Preflight> {
	const found = await lookup();
	if (!found.ok) {
		return { allow: true };
	}
	try {
		const answer = await found.client.call("parentToolStart", { callId, tool });
		if (typeof answer?.reserved === "boolean") {
			return { allow: true };
		}
		return {
			allow: false,
			reason: `blocked: Slate's parentToolStart answer is unreadable: ${JSON.stringify(answer)}`,
		};
	} catch (error) {
		if (error instanceof ControlError) {
			return { allow: false, reason: error.message };
		}
		if (error instanceof UnreachableError && /cannot reach|closed the connection/.test(error.message)) {
			return { allow: true }; // the coordinator is gone, and its workers with it
		}
		return {
			allow: false,
			reason: `blocked: the writer reservation could not be confirmed (${(error as Error).message})`,
		};
	}
}

/** Release `callId` (best effort: an unknown or unreachable release changes nothing). */
export async function release(lookup: ClientLookup, callId: string): Promise<void> {
	const found = await lookup();
	if (!found.ok) {
		return;
	}
	try {
		await found.client.call("parentToolEnd", { callId });
	} catch {
		// A coordinator that is gone holds no reservation; a refusal here changes nothing.
	}
}

export function registerReservation(pi: ExtensionAPI, lookup: ClientLookup): void {
	pi.on("tool_call", async (event) => {
		const verdict = await reserve(lookup, event.toolCallId, event.toolName);
		return verdict.allow ? undefined : { block: true, reason: verdict.reason };
	});
	pi.on("tool_execution_end", async (event) => {
		await release(lookup, event.toolCallId);
	});
}
