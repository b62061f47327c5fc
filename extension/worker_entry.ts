/**
 * The worker's entry point: what Slate gives a worker pi with `-e` (`worker_entry.ts`, not
 * `index.ts`). It loads only the worker's part of the extension (identity, the guards, the
 * control client and the tool transport), so a worker's pi never compiles the main session's
 * commands, widget, Hub overlay or handoff code.
 *
 * Loaded without an identity (no `SLATE_CAPABILITY_FD`), it fails closed: a pi that runs this
 * entry is meant to be a worker, and a worker with no coordinator to ask has no budget at all.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import { identity } from "./identity.ts";
import { CLIENT } from "./version.ts";
import { worker } from "./worker.ts";

export default function slateWorker(pi: ExtensionAPI): Promise<void> {
	return worker(pi, identity ?? { ok: false, reason: "loaded as a worker without SLATE_CAPABILITY_FD" }, CLIENT);
}
