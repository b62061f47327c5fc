/**
 * Slate's pi worker extension: the bridge between one pi worker process and its coordinator.
 *
 * Slate writes these files to a private directory and starts each worker
 * `pi --mode rpc -ne --no-mcp -e <dir>/index.ts --tools <builtins>,<granted Slate tools> ...`
 * with the generation's capability on descriptor 3 and the control socket in `SLATE_SOCKET`
 * (identity.ts). The extension then
 * - asks Slate before every model request, compaction and tool execution (guards.ts), and
 * - provides Slate's model tools: submit_result, delegate_task, delegate_coordinate.
 *
 * The tools are always registered: `--tools` is the ceiling, and Slate names only the ones this
 * generation was granted, so the others are neither declared to the model nor callable.
 * Everything that counts or decides lives in Slate; the extension keeps no state beyond its
 * connection (a pi `new_session` re-runs this factory, and that is harmless).
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import { ControlClient } from "./control.ts";
import { registerDelegateCoordinate } from "./delegate_coordinate.ts";
import { registerDelegateTask } from "./delegate_task.ts";
import { registerGuards } from "./guards.ts";
import { identity } from "./identity.ts";
import { registerSubmitResult } from "./submit_result.ts";

/** Slate's version (a Rust test keeps it equal to Cargo.toml's). */
export const EXTENSION_VERSION = "0.1.0";

export default function slateWorker(pi: ExtensionAPI): void {
	if (!identity.ok) {
		// Fail closed at startup: pi exits 1 with this on stderr (a worker setup failure).
		throw new Error(`Slate worker extension: ${identity.reason}`);
	}
	const client = new ControlClient({
		socket: identity.identity.socket,
		capability: identity.identity.capability,
		client: `slate-pi-extension ${EXTENSION_VERSION}`,
	});
	registerGuards(pi, client);
	registerSubmitResult(pi, client);
	registerDelegateTask(pi, client);
	registerDelegateCoordinate(pi, client);
	pi.on("session_shutdown", () => client.close());
}
