/**
 * Slate's model tools in pi: a transport of the coordinator's tool layer (`src/tools` in Rust).
 *
 * The coordinator lists the caller's tools (`tools`: name, label, description, prompt lines and
 * the parameter schema, which carries descriptions and no types so pi coerces nothing); each is
 * registered with pi as listed, and its `execute` forwards the input exactly as the model wrote
 * it (`callTool`). Slate parses it strictly, runs it as this connection's caller (the operator in
 * the main session, the generation in a worker) and answers `{text, details, isError}`: `text`
 * is the model's, `details` the renderers'. Nothing about a tool is decided here.
 *
 * Each call has its own connection: aborting the tool destroys it (the coordinator sees the
 * caller go: a worker's foreground delegation is cancelled, the root's goes on). While the call
 * runs, `toolUpdate` notifications on it become pi's partial results (one live row per child).
 * A background call's answer names its window (`pending`); the connection stays open until the
 * one `toolOutcome` for it arrives, which is delivered into the session as a message: a
 * notification for `delegate_task` and `delegate_coordinate`, a follow-up turn for the
 * compatibility `subagent` (its contract wakes the model).
 */
import type { AgentToolResult, ExtensionAPI } from "@earendil-works/pi-coding-agent";

import { Connection, type Endpoint } from "./control.ts";
import type { Notification, ToolAnswer, ToolOutcome, ToolSpec, ToolUpdate } from "./protocol.ts";
import { renderCall, renderOutcome, renderResult, type ToolDetails, updateLive } from "./render.ts";

export const OUTCOME_MESSAGE_TYPE = "slate-window-outcome";

/** The custom message and its options, as `pi.sendMessage` takes them. */
export type Send = (
	message: { customType: string; content: string; display: boolean; details: unknown },
	options: { triggerTurn: boolean; deliverAs?: "followUp" },
) => void;

/** Where calls go: the coordinator's socket as this caller, and how outcomes reach the session. */
export interface ToolTransport {
	endpoint: Endpoint;
	/** Delivers a background outcome into the session (the main session only). */
	send?: Send;
	/** Called once per background call still waiting when the session ends. */
	track?: (connection: Connection) => void;
}

/** How the one outcome message of a background call of `tool` treats the model's turn. */
function wakeOptions(tool: string): { triggerTurn: boolean; deliverAs?: "followUp" } {
	return tool === "subagent" ? { triggerTurn: true, deliverAs: "followUp" } : { triggerTurn: false };
}

type Result = AgentToolResult<ToolDetails> & { isError?: boolean };

function result(text: string, details: ToolDetails, isError = false): Result {
	return { content: [{ type: "text", text }], details, isError };
}

/** One `callTool` on its own connection; see the module comment. */
export async function callTool(
	transport: ToolTransport,
	tool: string,
	input: unknown,
	toolCallId: string,
	signal: AbortSignal | undefined,
	onUpdate: ((partial: Result) => void) | undefined,
): Promise<Result> {
	if (signal?.aborted) {
		throw abortError(tool);
	}
	let answered = false;
	let pending: number | undefined;
	let outcome: ToolOutcome | undefined;
	const connection = new Connection({
		...transport.endpoint,
		onNotification: (n: Notification) => {
			if (n.method === "toolUpdate") {
				const update: ToolUpdate = n.params;
				if (update.callId !== toolCallId) {
					return;
				}
				if (!answered) {
					onUpdate?.(result(update.text, { kind: "running", call: update.call, rows: update.rows }));
				} else {
					updateLive(toolCallId, update.rows, false);
				}
			} else if (n.method === "toolOutcome") {
				outcome = n.params;
				updateLive(toolCallId, outcome.rows, true);
				deliver();
			}
		},
	});
	const deliver = () => {
		if (outcome === undefined || pending === undefined || outcome.call !== pending) {
			return;
		}
		transport.send?.(
			{
				customType: OUTCOME_MESSAGE_TYPE,
				content: outcome.text,
				display: true,
				details: { kind: "outcome", call: outcome.call, rows: outcome.rows, outcome: outcome.details },
			},
			wakeOptions(tool),
		);
		// It is in the session now: the coordinator marks those generations delivered (the
		// widget collapses them). A lost answer only leaves them shown.
		connection
			.request("outcomeDelivered", { call: outcome.call })
			.catch(() => {})
			.finally(() => connection.destroy());
	};
	const onAbort = () => connection.destroy(abortError(tool));
	signal?.addEventListener("abort", onAbort, { once: true });
	let answer: ToolAnswer;
	try {
		answer = await connection.request("callTool", { tool, input, callId: toolCallId });
	} catch (error) {
		connection.destroy();
		throw error;
	} finally {
		answered = true;
		signal?.removeEventListener("abort", onAbort);
	}
	if (answer.pending === undefined || answer.pending === null) {
		connection.destroy();
	} else {
		pending = answer.pending;
		transport.track?.(connection);
		deliver();
	}
	return result(answer.text, { kind: "answer", ...(answer.details as object) } as ToolDetails, answer.isError);
}

/** Show a background call's outcome message as its settled rows (the text on expand). */
export function registerOutcomeRenderer(pi: ExtensionAPI): void {
	pi.registerMessageRenderer(OUTCOME_MESSAGE_TYPE, (message, options, theme) =>
		renderOutcome(message, options.expanded, theme, options.keyHint("app.tools.expand", "for the full outcome")),
	);
}

/** Register each of `tools` with pi, forwarding its calls through `transport()`. */
export function registerTools(pi: ExtensionAPI, tools: ToolSpec[], transport: () => Promise<ToolTransport>): void {
	for (const spec of tools) {
		pi.registerTool<Record<string, never>, ToolDetails>({
			name: spec.name,
			label: spec.label,
			description: spec.description,
			promptSnippet: spec.promptSnippet,
			...(spec.promptGuidelines === undefined ? {} : { promptGuidelines: spec.promptGuidelines }),
			// Descriptions only, no types: pi has nothing to coerce by, and Slate reads the input
			// strictly (the schema comes from the coordinator as is).
			parameters: spec.parameters as unknown as Record<string, never>,
			async execute(toolCallId, params, signal, onUpdate) {
				return callTool(await transport(), spec.name, params, toolCallId, signal, onUpdate);
			},
			renderCall: (args, theme, context) => renderCall(spec, args as Record<string, unknown>, theme, context),
			renderResult: (res, options, theme, context) =>
				renderResult(spec, res, options, theme, {
					toolCallId: context.toolCallId,
					lastComponent: context.lastComponent,
					invalidate: context.invalidate,
					isError: context.isError,
					expandHint: context.keyHint("app.tools.expand", "for the full text"),
				}),
		});
	}
}

function abortError(tool: string): Error {
	const error = new Error(`${tool}: cancelled (the tool call was aborted)`);
	error.name = "AbortError";
	return error;
}
