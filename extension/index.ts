/**
 * Slate's pi extension. One set of files, two roles, decided by `SLATE_CAPABILITY_FD` alone
 * (identity.ts):
 *
 * - set: this pi is a Slate worker (worker.ts): the guards and the child-local tools, speaking
 *   as its generation;
 * - unset: this is the user's own pi session (main_session.ts, installed by `slate pi
 *   install`): the session's coordinator, the root tools, the slash commands, the fleet widget
 *   and the parent mutation reservation, speaking as the operator.
 *
 * Everything that counts or decides lives in Slate; the extension keeps no state beyond its
 * connections (a pi `new_session` re-runs this factory, and that is harmless).
 */
import { type ExtensionAPI, VERSION } from "@earendil-works/pi-coding-agent";

import { openHubOverlay } from "./hub_overlay.ts";
import { identity } from "./identity.ts";
import { extensionDir, findInstallation } from "./install.ts";
import { mainSession } from "./main_session.ts";
import { worker } from "./worker.ts";

/** Slate's version (a Rust test keeps it equal to Cargo.toml's). */
export const EXTENSION_VERSION = "0.1.0";

const CLIENT = `slate-pi-extension ${EXTENSION_VERSION}`;

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
