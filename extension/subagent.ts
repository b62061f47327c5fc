/**
 * The compatibility `subagent` tool ([Native orchestration compatibility]).
 *
 * - Launch `{agent, task, cwd?, model?, limits?, async?}` and batch `{tasks: [...], cwd?,
 *   async?}` go to Slate as `delegate {request}`, exactly as written: Slate parses the
 *   compatibility shape (async defaults to true) and names every problem by JSON path.
 *   An accepted async call returns at once with, per task, the exact `id: "UUID@generation"`,
 *   `taskId` (the UUID), `generation` and the snapshot's fields; after the window drains, one
 *   `slate-window-outcome` message wakes the parent (`triggerTurn`, as a follow-up).
 *   `async: false` waits and returns Slate's preview.
 * - Actions map to the root's methods: `agents`/`list` → `agents`, `status` → `status {target}`,
 *   `stop` → `stop {target}`, `steer` → `steer {target, text}`, and `resume` continues the
 *   generation by its presence: paused → `resume`, idle → `followup`, parked → `revive` (each
 *   `{target, assignment}`), with the same one wake-up message when its window drains. The
 *   handle is passed as given: Slate refuses anything but an exact current `UUID@generation`.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import { type Admitted, rootDelegate, type RootServices, type ServicesLookup, isAdmitted } from "./root_tools.ts";
import type { Method } from "./protocol.ts";

export const SUBAGENT_TOOL = "subagent";

/** The actions and the members each one takes (as Slate's compatibility parser). */
export const SUBAGENT_ACTIONS = {
	agents: ["action"],
	list: ["action"],
	status: ["action", "id"],
	stop: ["action", "id"],
	steer: ["action", "id", "message"],
	resume: ["action", "id", "message"],
} as const satisfies Record<string, readonly string[]>;

export type SubagentAction = keyof typeof SUBAGENT_ACTIONS;

/** One control call of an action, or why it cannot be made (nothing is sent then). */
export type ActionCall =
	| { ok: true; action: SubagentAction; id?: unknown; message?: unknown }
	| { ok: false; message: string };

/** Check an action's members (the same rules and wording as Slate's compatibility parser). */
export function actionCall(input: Record<string, unknown>): ActionCall {
	const { action } = input;
	if (typeof action !== "string" || !Object.hasOwn(SUBAGENT_ACTIONS, action)) {
		return {
			ok: false,
			message: `subagent: $.action = ${JSON.stringify(action)}: must be one of ${Object.keys(SUBAGENT_ACTIONS).join(", ")}`,
		};
	}
	const known = action as SubagentAction;
	const allowed: readonly string[] = SUBAGENT_ACTIONS[known];
	const problems: string[] = [];
	for (const name of Object.keys(input)) {
		if (!allowed.includes(name)) {
			problems.push(`$.${name}: unknown property; allowed: ${allowed.join(", ")}`);
		}
	}
	if (allowed.includes("id") && typeof input.id !== "string") {
		problems.push('$.id: required: the exact "UUID@generation"');
	}
	if (allowed.includes("message") && (typeof input.message !== "string" || input.message.trim() === "")) {
		problems.push("$.message: required: non-whitespace text");
	}
	if (problems.length > 0) {
		return { ok: false, message: `subagent ${known}: ${problems.join("; ")}` };
	}
	return { ok: true, action: known, id: input.id, message: input.message };
}

/** The renewal method for a generation's presence (`resume` for anything else: Slate refuses it). */
export function renewalMethod(presence: unknown): Method {
	switch (presence) {
		case "idle":
			return "followup";
		case "parked":
			return "revive";
		default:
			return "resume";
	}
}

/** An accepted child as the compatibility shape shows it: `id` is `UUID@generation`. */
export function compatChild(child: { id: string; generation: number } & Record<string, unknown>): Record<string, unknown> {
	return { ...child, id: `${child.id}@${child.generation}`, taskId: child.id, generation: child.generation };
}

type ToolResult = { content: { type: "text"; text: string }[]; details: unknown };

function json(reply: unknown): ToolResult {
	return { content: [{ type: "text", text: JSON.stringify(reply, null, 2) }], details: reply };
}

/** The presence of `target`'s identity, read from the root's `status {target}`. */
async function presenceOf(s: RootServices, target: unknown): Promise<unknown> {
	const view = (await s.client.call("status", { target })) as {
		snapshot?: { id?: string };
		agents?: { id?: string; presence?: unknown }[];
	};
	const id = view?.snapshot?.id;
	return view?.agents?.find((a) => a.id === id)?.presence;
}

export async function runAction(s: RootServices, call: Extract<ActionCall, { ok: true }>): Promise<ToolResult> {
	switch (call.action) {
		case "agents":
		case "list":
			return json(await s.client.call("agents", {}));
		case "status":
			return json(await s.client.call("status", { target: call.id }));
		case "stop":
			return json(await s.client.call("stop", { target: call.id }));
		case "steer":
			return json(await s.client.call("steer", { target: call.id, text: call.message }));
		case "resume": {
			const method = renewalMethod(await presenceOf(s, call.id));
			const reply = await s.client.call(method, { target: call.id, assignment: call.message });
			if (isAdmitted(reply)) {
				s.delivery.expect(reply.call, "followUp");
				return {
					content: [{ type: "text", text: JSON.stringify(reply.children.map(compatChild), null, 2) }],
					details: reply,
				};
			}
			return json(reply);
		}
	}
}

export const subagentParameters = {
	type: "object",
	properties: {
		agent: {
			description: "Launch: general, scout, review, implementation (or worker, the same as implementation).",
		},
		task: { description: "Launch: the complete task text; the subagent inherits nothing else." },
		cwd: { description: "Optional: an existing directory to work in (for a batch: the default of its tasks)." },
		model: { description: "Optional: an exact model 'provider/id[:effort]' you are granted." },
		limits: { description: "Optional, narrowing only: {deadlineMs, requests, tools, depth, spawns}." },
		tasks: { description: "Batch: an ordered array of {agent, task, cwd?, model?, limits?}." },
		async: {
			description:
				"Optional, default true: return the accepted ids at once; one message with the outcomes wakes you after they finish. false waits for the results.",
		},
		action: { description: "Instead of a launch: agents (or list), status, stop, steer or resume." },
		id: { description: "status, stop, steer, resume: the exact 'UUID@generation' (never a prefix)." },
		message: { description: "steer, resume: the text." },
	},
} as const;

export function registerSubagent(pi: ExtensionAPI, services: ServicesLookup): void {
	pi.registerTool<typeof subagentParameters, unknown>({
		name: SUBAGENT_TOOL,
		label: "Subagent",
		description:
			"Run Slate subagents: launch one ({agent, task}) or a batch ({tasks}); async by default (returns ids at once, one message with the outcomes wakes you later). Or control them by exact id: {action: agents|list|status|stop|steer|resume}.",
		promptSnippet: "Launch and control Slate subagents (async by default; ids are exact UUID@generation)",
		promptGuidelines: [
			"Use subagent to hand self-contained work to a Slate subagent: give agent (general, scout, review or implementation) and a complete task; the subagent sees nothing else of this conversation.",
			"subagent launches are async by default: do not poll with subagent status; the outcomes arrive as one message when the work is done.",
			"subagent ids are exact 'UUID@generation' handles: copy them from the launch result; never shorten them.",
		],
		parameters: subagentParameters,
		async execute(_toolCallId, params, signal) {
			const s = await services();
			const input = params as Record<string, unknown>;
			if (typeof input === "object" && input !== null && "action" in input) {
				const call = actionCall(input);
				if (!call.ok) {
					throw new Error(call.message);
				}
				return runAction(s, call);
			}
			return rootDelegate(s, params, signal, "followUp", (a: Admitted) => a.children.map(compatChild));
		},
	});
}
