/**
 * Just enough of pi's `ExtensionAPI` to run the extension's handlers and tools in a test:
 * `on` and `registerTool` record what was registered.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

type AnyHandler = (event: unknown, ctx: unknown) => unknown;

export interface RegisteredTool {
	name: string;
	parameters: unknown;
	execute(
		toolCallId: string,
		params: unknown,
		signal: AbortSignal | undefined,
		onUpdate: undefined,
		ctx: unknown,
	): Promise<{ content: { type: string; text: string }[]; details: unknown; isError?: boolean }>;
}

export class FakePi {
	readonly handlers = new Map<string, AnyHandler[]>();
	readonly tools = new Map<string, RegisteredTool>();

	get api(): ExtensionAPI {
		const api = {
			on: (event: string, handler: AnyHandler) => {
				this.handlers.set(event, [...(this.handlers.get(event) ?? []), handler]);
				return () => {};
			},
			registerTool: (tool: RegisteredTool) => {
				this.tools.set(tool.name, tool);
			},
		};
		return api as unknown as ExtensionAPI;
	}

	/** Run every handler of `event` (as pi does, in order) and return the last answer. */
	async emit(event: string, payload: unknown, ctx: unknown = {}): Promise<unknown> {
		let answer: unknown;
		for (const handler of this.handlers.get(event) ?? []) {
			answer = await handler(payload, ctx);
		}
		return answer;
	}

	tool(name: string): RegisteredTool {
		const tool = this.tools.get(name);
		if (tool === undefined) {
			throw new Error(`no tool ${name} registered`);
		}
		return tool;
	}
}
