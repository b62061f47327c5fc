/**
 * The main session's native tools, as the root: `delegate_task` and `delegate_coordinate`.
 *
 * The input goes to the coordinator exactly as the model wrote it (the parameters are declared
 * with descriptions only, so pi coerces nothing; Slate validates strictly and names the field):
 *
 * - `delegate_task` → `delegate {request}`. Foreground (the default): the call waits for the
 *   window to drain; the text is Slate's preview, `details` the snapshot (or `{children}` for a
 *   batch). `background: true`: the text is the accepted snapshots at once, and after the
 *   window drains exactly one `slate-window-outcome` message follows, notification only.
 *   Whether a call ran in the background is read from Slate's answer, not from the input.
 * - `delegate_coordinate` → the method of the same name as `action` (status, stop, park,
 *   resume, followup, revive, message, inbox, wait). An action that starts a window (`resume`,
 *   `followup`, `revive`) gets the same one notification when it drains.
 *
 * Aborting a foreground call closes its connection; the root's window goes on (the coordinator
 * owns it), and its outcome stays readable with `status`.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import type { ControlClient } from "./control.ts";
import { coordinate, DELEGATE_COORDINATE_TOOL } from "./delegate_coordinate.ts";
import {
	DELEGATE_TASK_TOOL,
	type DelegateDetails,
	delegateParametersFor,
	details,
	isForeground,
	TASK_FIELDS,
} from "./delegate_task.ts";
import type { Wake } from "./delivery.ts";
import type { ChildSnapshot, DelegateOutcome, Reply } from "./protocol.ts";

/** What the root's tools use of the session's runtime. */
export interface RootServices {
	client: ControlClient;
	delivery: { expect(call: number, wake: Wake): void };
}

/** The runtime, once started; rejects with why there is none. */
export type ServicesLookup = () => Promise<RootServices>;

export type Admitted = { kind: "admitted"; call: number; children: ChildSnapshot[] };

export function isAdmitted(reply: unknown): reply is Admitted {
	return (
		typeof reply === "object" &&
		reply !== null &&
		(reply as { kind?: unknown }).kind === "admitted" &&
		typeof (reply as { call?: unknown }).call === "number" &&
		Array.isArray((reply as { children?: unknown }).children)
	);
}

/** The text of an accepted background call. */
export function acceptedText(admitted: Admitted, children: unknown[]): string {
	const n = admitted.children.length;
	return (
		`Accepted ${n} task${n === 1 ? "" : "s"} in the background (call ${admitted.call}); ` +
		"one message with the outcomes follows after they drain.\n" +
		JSON.stringify(children, null, 2)
	);
}

type ToolResult = { content: { type: "text"; text: string }[]; details: unknown };

/** One `delegate` call as the root; `wake` says how the background outcome is delivered. */
export async function rootDelegate(
	services: RootServices,
	request: unknown,
	signal: AbortSignal | undefined,
	wake: Wake,
	present: (admitted: Admitted) => unknown[] = (a) => a.children,
): Promise<ToolResult> {
	const reply: Reply | DelegateOutcome = await services.client.callOnce("delegate", { request }, signal);
	if (isForeground(reply)) {
		return { content: [{ type: "text", text: reply.preview }], details: details(request, reply) };
	}
	if (isAdmitted(reply)) {
		services.delivery.expect(reply.call, wake);
		const shown = present(reply);
		return { content: [{ type: "text", text: acceptedText(reply, shown) }], details: batchDetails(request, reply.children) };
	}
	throw new Error(`delegate: Slate answered neither an admission nor a window outcome: ${JSON.stringify(reply)}`);
}

function batchDetails(request: unknown, children: ChildSnapshot[]): DelegateDetails | undefined {
	const batch = typeof request === "object" && request !== null && "tasks" in request;
	return batch ? { children } : children[0];
}

export const rootCoordinateParameters = {
	type: "object",
	properties: {
		action: {
			description:
				"status (the fleet, or one exact generation), stop, park, resume (a paused generation), followup (an idle one: a new generation), revive (a parked one), message, inbox (read and empty the root inbox) or wait.",
		},
		target: { description: "An exact generation: 'UUID@generation' or {id, generation}. Never a prefix or 'latest'." },
		assignment: { description: "resume, followup, revive: the complete new assignment text." },
		resultSchema: { description: "followup, revive: optional JSON Schema for the new generation's submit_result." },
		text: { description: "message: non-blank text, at most 4096 UTF-8 bytes, to a direct child." },
		mode: { description: "message: inbox (default), steer or followUp." },
		timeoutMs: { description: "wait (required): 1 to 60000 milliseconds." },
		messageId: { description: "wait: a message receipt id to wait for (not together with target)." },
		summary: { description: "status: true for one summary row per child." },
	},
	required: ["action"],
} as const;

export function registerRootTools(pi: ExtensionAPI, services: ServicesLookup): void {
	pi.registerTool<ReturnType<typeof delegateParametersFor>, unknown>({
		name: DELEGATE_TASK_TOOL,
		label: "Delegate task",
		description: `Delegate work to Slate subagents. Give one task (${TASK_FIELDS}) or an ordered batch in tasks. Slate checks the whole call before anything starts. Foreground by default: wait for the ordered outcomes. With background: true the call returns the accepted identities at once, and one message with the outcomes arrives after they drain (it does not start a turn).`,
		promptSnippet: "Delegate tasks to Slate subagents (foreground by default, or background) and get their ordered outcomes",
		parameters: delegateParametersFor(
			"Optional: true to return the accepted identities (UUID@generation) at once; the outcomes arrive later as one message.",
		),
		async execute(_toolCallId, params, signal) {
			return rootDelegate(await services(), params, signal, "notify");
		},
	});
	pi.registerTool<typeof rootCoordinateParameters, unknown>({
		name: DELEGATE_COORDINATE_TOOL,
		label: "Coordinate",
		description:
			"Control and talk to your Slate subagents by exact identity (UUID@generation): status, stop, park, resume, followup, revive, message, inbox, wait. A resume, followup or revive runs in the background; one message with its outcome arrives after it drains.",
		promptSnippet: "Inspect, stop, park, resume, follow up, revive, message or wait for Slate subagents",
		parameters: rootCoordinateParameters,
		async execute(_toolCallId, params, signal) {
			const s = await services();
			const reply = await coordinate(s.client, params, signal);
			if (isAdmitted(reply)) {
				s.delivery.expect(reply.call, "notify");
			}
			return { content: [{ type: "text", text: JSON.stringify(reply, null, 2) }], details: reply };
		},
	});
}
