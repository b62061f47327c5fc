/**
 * Slate's pi extension, the entry `slate pi install` lists: the user's own pi session
 * (main_session.ts): the session's coordinator, the root tools, the slash commands, the fleet
 * widget and the parent mutation reservation, speaking as the operator.
 *
 * Workers start from their own, leaner entry (worker_entry.ts). Should this one ever be loaded
 * with a worker's identity (`SLATE_CAPABILITY_FD` set, identity.ts), it acts as the worker
 * (worker.ts) rather than as an operator's session: the role is decided by the identity alone.
 *
 * Everything that counts or decides lives in Slate; the extension keeps no state beyond its
 * connections (a pi `new_session` re-runs this factory, and that is harmless).
 */
import { type ExtensionAPI, VERSION } from "@earendil-works/pi-coding-agent";

import { openHubOverlay } from "./hub_overlay.ts";
import { identity } from "./identity.ts";
import { extensionDir, findInstallation } from "./install.ts";
import { mainSession } from "./main_session.ts";
import { CLIENT } from "./version.ts";
import { worker } from "./worker.ts";

export default function slate(pi: ExtensionAPI): void | Promise<void> {
	if (identity !== null) {
		return worker(pi, identity, CLIENT);
	}
	mainSession(pi, {
		installation: findInstallation(process.env, extensionDir()),
		hostVersion: VERSION,
		client: CLIENT,
		env: process.env,
		openHub: openHubOverlay,
	});
}
