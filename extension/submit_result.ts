/**
 * `submit_result`: the worker hands Slate its structured result, `{"value": <any JSON value>}`.
 *
 * pi coerces tool arguments to their declared schema (a string "42" becomes the number 42 when
 * the schema says integer), and the contract's validation is strict and non-coercing. So `value`
 * is declared with no constraint at all: pi validates only the envelope, and the value reaches
 * Slate (`submit`) as the model wrote it. Slate validates it against the task's `resultSchema`
 * and records the attempt; its `message` is the model's answer. Anything but `submitted` is an
 * error result, so the model knows to correct it (an invalid attempt) or to stop (a duplicate).
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import type { ControlClient } from "./control.ts";
import type { SubmitResult } from "./protocol.ts";

export const SUBMIT_RESULT_TOOL = "submit_result";

/** The envelope only: `value` is required and may be any JSON value. */
export const submitParameters = {
	type: "object",
	properties: {
		value: {
			description:
				"The result itself, as a JSON value that matches the task's result schema exactly (no string where the schema wants a number).",
		},
	},
	required: ["value"],
	additionalProperties: false,
} as const;

export function registerSubmitResult(pi: ExtensionAPI, client: ControlClient): void {
	pi.registerTool<typeof submitParameters, SubmitResult>({
		name: SUBMIT_RESULT_TOOL,
		label: "Submit result",
		description:
			"Submit the structured result your task asks for. Slate checks the value strictly against the task's result schema; an invalid value is reported with JSON-Pointer errors and may be corrected within your limits. The first valid value is final. Submitting does not end your work: finish with a short final answer.",
		promptSnippet: "Submit the task's structured result as a JSON value",
		parameters: submitParameters,
		async execute(_toolCallId, params) {
			const { value } = params as { value: unknown };
			const reply = await client.call("submit", { value });
			return {
				content: [{ type: "text", text: reply.message }],
				details: reply,
				isError: reply.status !== "submitted",
			};
		},
	});
}
