/**
 * The extension in a Slate worker (the worker role): the bridge between one pi worker process
 * and its coordinator.
 *
 * Slate starts each worker `pi --mode rpc -ne --no-mcp -e <dir>/index.ts --tools <builtins>,
 * <granted Slate tools> ...` with the generation's capability on descriptor 3 and the control
 * socket in `SLATE_SOCKET` (identity.ts). The extension then
 * - asks Slate before every model request, compaction and tool execution (guards.ts), and
 * - provides Slate's model tools: submit_result, delegate_task, delegate_coordinate.
 *
 * The tools are always registered: `--tools` is the ceiling, and Slate names only the ones this
 * generation was granted, so the others are neither declared to the model nor callable.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import { ControlClient } from "./control.ts";
import { registerDelegateCoordinate } from "./delegate_coordinate.ts";
import { registerDelegateTask } from "./delegate_task.ts";
import { registerGuards } from "./guards.ts";
import type { IdentityResult } from "./identity.ts";
import { registerSubmitResult } from "./submit_result.ts";

export function worker(pi: ExtensionAPI, identity: IdentityResult, client: string): void {
	if (!identity.ok) {
		// Fail closed at startup: pi exits 1 with this on stderr (a worker setup failure).
		throw new Error(`Slate worker extension: ${identity.reason}`);
	}
	const control = new ControlClient({
		socket: identity.identity.socket,
		capability: identity.identity.capability,
		client,
	});
	registerGuards(pi, control);
	registerSubmitResult(pi, control);
	registerDelegateTask(pi, control);
	registerDelegateCoordinate(pi, control);
	pi.on("session_shutdown", () => control.close());
}
