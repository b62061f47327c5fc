/**
 * Just enough of pi's `ExtensionAPI` to run the extension's handlers, tools and commands in a
 * test: `on`, `registerTool` and `registerCommand` record what was registered, `sendMessage`
 * records what was sent.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

type AnyHandler = (event: unknown, ctx: unknown) => unknown;

export interface RegisteredTool {
	name: string;
	parameters: unknown;
	promptSnippet?: string;
	promptGuidelines?: string[];
	execute(
		toolCallId: string,
		params: unknown,
		signal: AbortSignal | undefined,
		onUpdate: ((partial: unknown) => void) | undefined,
		ctx: unknown,
	): Promise<{ content: { type: string; text: string }[]; details: unknown; isError?: boolean }>;
}

export interface RegisteredCommand {
	description?: string;
	handler(args: string, ctx: unknown): Promise<void>;
}

export interface Sent {
	message: { customType: string; content: string; display: boolean; details: unknown };
	options: unknown;
}

export class FakePi {
	readonly handlers = new Map<string, AnyHandler[]>();
	readonly tools = new Map<string, RegisteredTool>();
	readonly commands = new Map<string, RegisteredCommand>();
	readonly sent: Sent[] = [];

	get api(): ExtensionAPI {
		const api = {
			on: (event: string, handler: AnyHandler) => {
				this.handlers.set(event, [...(this.handlers.get(event) ?? []), handler]);
				return () => {};
			},
			registerTool: (tool: RegisteredTool) => {
				this.tools.set(tool.name, tool);
			},
			registerCommand: (name: string, command: RegisteredCommand) => {
				this.commands.set(name, command);
			},
			registerMessageRenderer: () => {},
			sendMessage: (message: Sent["message"], options: unknown) => {
				this.sent.push({ message, options });
			},
			// Every registered tool, as an extension tool of this file (pi's provenance shape).
			getAllTools: () =>
				[...this.tools.keys()].map((name) => ({ name, sourceInfo: { path: "/fake/extension.ts", source: "local" } })),
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

	command(name: string): RegisteredCommand {
		const command = this.commands.get(name);
		if (command === undefined) {
			throw new Error(`no command /${name} registered`);
		}
		return command;
	}

	tool(name: string): RegisteredTool {
		const tool = this.tools.get(name);
		if (tool === undefined) {
			throw new Error(`no tool ${name} registered`);
		}
		return tool;
	}
}
