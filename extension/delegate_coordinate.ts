/**
 * `delegate_coordinate` for a worker: live-parent messaging through Slate.
 *
 * `action` picks the control method (the table below); every other parameter goes to Slate as
 * the model wrote it. Slate decides everything else: which actions this generation was granted,
 * who it may address (exact parent, direct children, true siblings; no target = the root
 * inbox), and the limits of text and timeouts. The root-only actions are forwarded too, so the
 * model reads Slate's refusal in the contract's wording instead of a guess of the extension's.
 * Like `delegate_task`, the parameters carry descriptions but no types, so pi coerces nothing.
 *
 * `wait` can last up to a minute: it runs on its own connection, destroyed if the tool is
 * aborted (Slate then drops the waiter). The other actions use the shared connection.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import type { ControlClient } from "./control.ts";
import type { Method, PassThrough } from "./protocol.ts";

export const DELEGATE_COORDINATE_TOOL = "delegate_coordinate";

/** The contract's actions and the control method each one is. */
export const ACTION_METHODS = {
	message: "message",
	inbox: "inbox",
	wait: "wait",
	status: "status",
	stop: "stop",
	park: "park",
	resume: "resume",
	followup: "followup",
	revive: "revive",
} as const satisfies Record<string, Method>;

export type Action = keyof typeof ACTION_METHODS;

/** Actions whose call may be long: they get their own, abortable connection. */
const LONG_ACTIONS: ReadonlySet<Action> = new Set<Action>(["wait"]);

/** The control call an action is, or why there is none. */
export type CoordinateCall =
	| { ok: true; action: Action; method: (typeof ACTION_METHODS)[Action]; params: PassThrough }
	| { ok: false; message: string };

/** Split the tool's input into the method and its params (everything but `action`, as given). */
export function coordinateCall(input: unknown): CoordinateCall {
	if (typeof input !== "object" || input === null || Array.isArray(input)) {
		return { ok: false, message: "delegate_coordinate: the input must be an object with an action" };
	}
	const { action, ...params } = input as Record<string, unknown>;
	if (typeof action !== "string" || !Object.hasOwn(ACTION_METHODS, action)) {
		return {
			ok: false,
			message: `delegate_coordinate: unknown action ${JSON.stringify(action)}; expected one of ${Object.keys(ACTION_METHODS).join(", ")}`,
		};
	}
	const known = action as Action;
	return { ok: true, action: known, method: ACTION_METHODS[known], params };
}

/** Run one action: `wait` on its own abortable connection, the others on the shared one. */
export async function coordinate(client: ControlClient, input: unknown, signal?: AbortSignal): Promise<unknown> {
	const call = coordinateCall(input);
	if (!call.ok) {
		throw new Error(call.message);
	}
	return LONG_ACTIONS.has(call.action)
		? await client.callOnce(call.method, call.params, signal)
		: await client.call(call.method, call.params);
}

export const coordinateParameters = {
	type: "object",
	properties: {
		action: {
			description:
				"message (send text), inbox (read and empty your mailbox) or wait (for one outcome, one receipt, or your inbox). status, stop, park, resume, followup and revive are the root's only.",
		},
		target: {
			description:
				"message/wait: an exact generation, {id, generation} or 'UUID@generation'. message without target goes to the root inbox.",
		},
		text: { description: "message: non-blank text, at most 4096 UTF-8 bytes." },
		mode: { description: "message: inbox (default), steer or followUp." },
		timeoutMs: { description: "wait (required): 1 to 60000 milliseconds." },
		messageId: { description: "wait: a message receipt id to wait for (not together with target)." },
	},
	required: ["action"],
} as const;

export function registerDelegateCoordinate(pi: ExtensionAPI, client: ControlClient): void {
	pi.registerTool<typeof coordinateParameters, unknown>({
		name: DELEGATE_COORDINATE_TOOL,
		label: "Coordinate",
		description:
			"Message your parent, your direct children or your siblings (exact UUID@generation), read your inbox, or wait for an outcome or a message. Identities come from your task text or earlier results; there is no registry lookup.",
		promptSnippet: "Message the parent, children or siblings; read the inbox; wait for outcomes",
		parameters: coordinateParameters,
		async execute(_toolCallId, params, signal) {
			const reply = await coordinate(client, params, signal);
			return {
				content: [{ type: "text", text: JSON.stringify(reply, null, 2) }],
				details: reply,
			};
		},
	});
}
