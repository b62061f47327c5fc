/**
 * The guards: before pi sends a model request, compacts or summarizes a branch, or runs a tool,
 * it asks Slate (`guard`), and Slate's answer is final. Slate counts requests and tools here, so
 * a denial is the budget speaking; the extension keeps no counters.
 *
 * How each denial stops pi (observed in pi 1.6, see shared/pi/EXTENSION.md):
 * - model request (`before_provider_request`): `ctx.abort()`, so zero bytes reach the provider
 *   and the turn ends `aborted`. Throwing would not stop the request (pi sends it anyway).
 * - compaction (`session_before_compact`) and branch summary (`session_before_tree`, only when a
 *   summary is wanted: navigating without one makes no request): `{cancel: true}`. Compaction
 *   requests bypass `before_provider_request`, so they need their own guard.
 * - tool (`tool_call`, also for Slate's own tools and nested calls): `{block: true, reason}`; the
 *   model gets the reason as the tool result and the tool never runs.
 *
 * Fail closed: a coordinator that cannot be reached, refuses the connection or answers
 * something unreadable is a denial, with a reason that says so.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import type { ControlClient } from "./control.ts";
import type { GuardParams, GuardResult } from "./protocol.ts";

/** What the guard decided; never a rejection. */
export type Verdict = { allow: true } | { allow: false; reason: string };

/** Ask Slate; any failure to get a readable answer denies. */
export async function ask(client: ControlClient, params: GuardParams): Promise<Verdict> {
	let answer: GuardResult;
	try {
		answer = await client.call("guard", params);
	} catch (error) {
		return {
			allow: false,
			reason: `denied: Slate could not be asked (${(error as Error).message}); a worker acts only with its coordinator's consent`,
		};
	}
	if (answer?.allow === true) {
		return { allow: true };
	}
	if (answer?.allow === false && typeof answer.reason === "string") {
		return { allow: false, reason: answer.reason };
	}
	return { allow: false, reason: `denied: Slate's guard answer is unreadable: ${JSON.stringify(answer)}` };
}

export function registerGuards(pi: ExtensionAPI, client: ControlClient): void {
	pi.on("before_provider_request", async (_event, ctx) => {
		const verdict = await ask(client, { kind: "request" });
		if (!verdict.allow) {
			// pi's own stderr: Slate keeps its tail as evidence; the model never sees this.
			process.stderr.write(`slate: model request ${verdict.reason}\n`);
			ctx.abort();
		}
		return undefined; // the payload unchanged
	});

	pi.on("session_before_compact", async () => {
		const verdict = await ask(client, { kind: "compaction" });
		return verdict.allow ? undefined : { cancel: true };
	});

	pi.on("session_before_tree", async (event) => {
		if (!event.preparation.userWantsSummary) {
			return undefined;
		}
		const verdict = await ask(client, { kind: "compaction" });
		return verdict.allow ? undefined : { cancel: true };
	});

	pi.on("tool_call", async (event) => {
		const verdict = await ask(client, {
			kind: "tool",
			tool: event.toolName,
			callId: event.toolCallId,
		});
		return verdict.allow ? undefined : { block: true, reason: verdict.reason };
	});
}

/**
 * Refuse everything, asking no one: a pre-started process before it is bound to a generation
 * (`worker_entry.ts`) has no coordinator budget to spend.
 */
export function registerRefusals(pi: ExtensionAPI, reason: string): void {
	pi.on("before_provider_request", (_event, ctx) => {
		process.stderr.write(`slate: model request denied: ${reason}\n`);
		ctx.abort();
		return undefined;
	});
	pi.on("session_before_compact", () => ({ cancel: true }));
	pi.on("session_before_tree", () => ({ cancel: true }));
	pi.on("tool_call", () => ({ block: true, reason: `denied: ${reason}` }));
}
