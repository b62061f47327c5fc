/**
 * `delegate_task` for a worker: a nested, foreground delegation through Slate (`delegate`).
 *
 * The native input (one task, or an ordered `tasks` batch) goes to Slate exactly as the model
 * wrote it, as `delegate {request}`: Slate validates it (shape, profiles, grants, limits, depth,
 * capacity) and names problems by JSON path. The parameters are declared so the model sees the
 * shape, but with descriptions only and no `type`, so pi's coercion has nothing to coerce by and
 * passes every value through. A worker's call is foreground only (Slate refuses `background`).
 *
 * The call waits on its own connection until the window drains; the result text is Slate's
 * ordered preview, the details are the snapshots (one `ChildSnapshot` for a single task,
 * `{children}` for a batch). When pi aborts the tool, the socket is destroyed at once, and Slate
 * cancels and drains the tasks of this call that have not settled.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import type { ControlClient } from "./control.ts";
import type { ChildSnapshot, DelegateOutcome, Reply } from "./protocol.ts";

export const DELEGATE_TASK_TOOL = "delegate_task";

export const TASK_FIELDS =
	"assignment or taskFile (exactly one), and optionally profile, cwd, model, models, resultSchema, limits, spawn, coordination";

/** The parameters, with `background` described for the caller's role. */
export function delegateParametersFor(background: string) {
	return {
		type: "object",
		properties: { ...delegateParameters.properties, background: { description: background } },
	} as const;
}

export const delegateParameters = {
	type: "object",
	properties: {
		assignment: {
			description:
				"The complete task for one subagent (non-blank text). It inherits nothing else: include what it needs to know.",
		},
		taskFile: {
			description:
				"Instead of assignment: a task text file, relative to the task's cwd (no absolute paths, '..', hidden or node_modules components).",
		},
		profile: { description: "The subagent profile to run it with (one you may spawn, e.g. scout or review)." },
		cwd: { description: "Optional: an existing directory to work in (default: your own workspace)." },
		model: {
			description:
				"Optional: an exact model selection 'provider/id[:effort]' (or a logical model with a reason), if granted.",
		},
		models: { description: "Optional: a model allowlist that narrows the grants." },
		resultSchema: {
			description:
				"Optional: a JSON Schema (supported subset) the subagent's submit_result value must match.",
		},
		limits: {
			description:
				"Optional, narrowing only: {deadlineMs, requests, tools, depth, spawns} (positive integers).",
		},
		spawn: { description: "Optional, narrowing only: the profiles the subagent may spawn ([] for none)." },
		coordination: {
			description: "Optional, narrowing only: the delegate_coordinate actions it may use ([] for none).",
		},
		tasks: {
			description: `Instead of a single task: an ordered batch, an array of task objects, each with ${TASK_FIELDS}.`,
		},
		background: {
			description: "Leave out: a subagent's own delegations are foreground only (it waits for the outcomes).",
		},
	},
} as const;

/** What the tool's `details` hold: the snapshot, or `{children}` for a batch. */
export type DelegateDetails = ChildSnapshot | { children: ChildSnapshot[] };

export function registerDelegateTask(pi: ExtensionAPI, client: ControlClient): void {
	pi.registerTool<typeof delegateParameters, DelegateDetails | undefined>({
		name: DELEGATE_TASK_TOOL,
		label: "Delegate task",
		description: `Delegate work to subagents and wait for their outcomes. Give one task (${TASK_FIELDS}) or an ordered batch in tasks. Slate checks the whole call before anything starts; each task gets its own outcome, in order.`,
		promptSnippet: "Delegate tasks to subagents (foreground) and get their ordered outcomes",
		parameters: delegateParameters,
		async execute(_toolCallId, params, signal) {
			const reply = await client.callOnce("delegate", { request: params }, signal);
			if (!isForeground(reply)) {
				// Slate admits a worker's delegation in the foreground only.
				throw new Error(
					`delegate_task: Slate answered without a window outcome: ${JSON.stringify(reply)}`,
				);
			}
			return {
				content: [{ type: "text", text: reply.preview }],
				details: details(params, reply),
			};
		},
	});
}

export function isForeground(reply: Reply | DelegateOutcome): reply is DelegateOutcome {
	return "outcome" in reply && typeof reply.preview === "string";
}

/** The contract's `details`: a single task's snapshot, or `{children}` for a `tasks` batch. */
export function details(request: unknown, reply: DelegateOutcome): DelegateDetails | undefined {
	const outcomes = reply.outcome.outcomes;
	const batch = typeof request === "object" && request !== null && "tasks" in request;
	return batch ? { children: outcomes } : outcomes[0];
}
