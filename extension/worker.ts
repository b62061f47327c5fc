/**
 * The extension in a Slate worker (the worker role): the bridge between one pi worker process
 * and its coordinator.
 *
 * Slate starts each worker `pi --mode rpc -ne --no-mcp -e <dir>/worker_entry.ts --tools <builtins>,
 * <granted Slate tools> ...` with the generation's capability on descriptor 3 and the control
 * socket in `SLATE_SOCKET` (identity.ts). The extension then
 * - asks Slate before every model request, compaction and tool execution (guards.ts), and
 * - provides the Slate model tools this generation was granted (submit_result, delegate_task,
 *   delegate_coordinate), as the coordinator's tool layer lists them for it (tools.ts).
 *
 * The factory is asynchronous: pi awaits it, so the tools are registered before the first
 * prompt. A coordinator that cannot be asked fails the worker at startup.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import { ControlClient, type Endpoint } from "./control.ts";
import { registerGuards } from "./guards.ts";
import type { Binding, IdentityResult } from "./identity.ts";
import { ownHash } from "./own_hash.ts";
import { registerTools } from "./tools.ts";

/** Registered by every worker: `get_commands` listing it proves to Slate that this extension loaded
 * (`BOUND_COMMAND` in `src/worker/pi/pool.rs`). It does nothing. */
export const BOUND_COMMAND = "slate-worker";

/**
 * `binding` is a pre-started process's (worker_entry.ts): pi was started without this worker's
 * system prompt and with every worker tool, so both are given here, before every run.
 */
export async function worker(
	pi: ExtensionAPI,
	identity: IdentityResult,
	client: string,
	binding?: Binding,
): Promise<void> {
	if (!identity.ok) {
		// Fail closed at startup: pi exits 1 with this on stderr (a worker setup failure).
		throw new Error(`Slate worker extension: ${identity.reason}`);
	}
	let extension: string;
	try {
		extension = ownHash();
	} catch (error) {
		throw new Error(`Slate worker extension: cannot read its own files: ${(error as Error).message}`);
	}
	const endpoint: Endpoint = {
		socket: identity.identity.socket,
		capability: identity.identity.capability,
		client,
		extension,
	};
	const control = new ControlClient(endpoint);
	registerGuards(pi, control);
	pi.on("session_shutdown", () => control.close());
	let tools;
	try {
		tools = (await control.call("tools", {})).tools;
	} catch (error) {
		throw new Error(`Slate worker extension: cannot read this generation's tools: ${(error as Error).message}`);
	}
	registerTools(pi, tools, async () => ({ endpoint }));
	if (binding !== undefined) {
		const active = [...binding.tools];
		pi.on("session_start", () => {
			pi.setActiveTools(active);
		});
		pi.on("before_agent_start", (event) => {
			pi.setActiveTools(active);
			// As `--system-prompt` would: pi builds the same prompt and records the same sections.
			event.systemPromptOptions.customPrompt = binding.systemPrompt;
			return undefined;
		});
	}
	pi.registerCommand(BOUND_COMMAND, {
		description: "Slate: this pi is a Slate worker (Slate checks for this command)",
		handler: async () => {},
	});
}
