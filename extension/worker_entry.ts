/**
 * The worker's entry point: what Slate gives a worker pi with `-e` (`worker_entry.ts`, not
 * `index.ts`). It loads only the worker's part of the extension (identity, the guards, the
 * control client and the tool transport), so a worker's pi never compiles the main session's
 * commands, widget, Hub overlay or handoff code.
 *
 * Loaded without an identity (no `SLATE_CAPABILITY_FD`), it fails closed: a pi that runs this
 * entry is meant to be a worker, and a worker with no coordinator to ask has no budget at all.
 *
 * A pre-started process (`SLATE_WORKER_POOLED`, `src/worker/pi/pool.rs`) is no one's worker
 * yet: at startup it refuses every model request, compaction and tool. The coordinator binds it
 * by writing the generation's binding to its descriptor and switching it to the generation's
 * session; pi re-runs this factory then, which reads the binding and becomes that worker.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import { registerRefusals } from "./guards.ts";
import { type Binding, identity, isPooled, type Pending, takeBinding, takePending } from "./identity.ts";
import { CLIENT } from "./version.ts";
import { worker } from "./worker.ts";

/** A pooled process's descriptor and socket, taken at load (module state survives re-runs). */
const pending = isPooled(process.env) ? takePending(process.env) : null;
/** The binding, read once: the factory's first run after startup in a pooled process. */
let bound: { ok: true; binding: Binding } | { ok: false; reason: string } | null = null;
let runs = 0;

export default function slateWorker(pi: ExtensionAPI): Promise<void> {
	if (pending === null) {
		return worker(pi, identity ?? { ok: false, reason: "loaded as a worker without SLATE_CAPABILITY_FD" }, CLIENT);
	}
	runs += 1;
	if (!pending.ok) {
		return worker(pi, pending, CLIENT);
	}
	if (runs === 1) {
		registerRefusals(pi, "this pre-started Slate worker is not bound to a task yet");
		return Promise.resolve();
	}
	bound ??= takeBinding(pending.pending as Pending);
	if (!bound.ok) {
		return worker(pi, bound, CLIENT);
	}
	return worker(pi, { ok: true, identity: bound.binding.identity }, CLIENT, bound.binding);
}
