/**
 * `workerExtensions` (spec 000 "Worker extensions"): the host session's own extensions that
 * Slate loads into every worker too.
 *
 * The extension only reports: once the session's coordinator is up (and before any tool is
 * served), the load units this pi
 * session has loaded (grouped from `pi.getAllTools()` by each tool's `sourceInfo.path`;
 * pi's built-ins and SDK tools are not extensions) go to `hostExtensions`, and the coordinator
 * decides with the session's patterns which ones workers load, which are withheld and why.
 * The doctrine line it answers is appended to this session's system prompt before each run, so
 * the model knows what it can delegate.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import type { ControlClient } from "./control.ts";
import type { HostUnit } from "./protocol.ts";

/** What `pi.getAllTools()` says of one tool, as far as this needs. */
export interface ToolProvenance {
	name: string;
	sourceInfo?: { path?: string; source?: string };
}

/** The extension load units behind `tools`, in first-seen order, each with its tools. */
export function hostUnits(tools: readonly ToolProvenance[]): HostUnit[] {
	const units = new Map<string, HostUnit>();
	for (const tool of tools) {
		const path = tool.sourceInfo?.path;
		const source = tool.sourceInfo?.source;
		if (path === undefined || path === "" || source === undefined || source === "builtin" || source === "sdk") {
			continue;
		}
		let unit = units.get(path);
		if (unit === undefined) {
			unit = { source, path, tools: [] };
			units.set(path, unit);
		}
		unit.tools.push({ name: tool.name, path });
	}
	return [...units.values()];
}

/**
 * Report the host's units to the session's new coordinator; its doctrine line, or `null`.
 * Awaited before the session's tools are served, so no worker starts before the decision.
 */
export async function reportHostExtensions(pi: ExtensionAPI, client: ControlClient): Promise<string | null> {
	try {
		const units = hostUnits(pi.getAllTools() as ToolProvenance[]);
		return (await client.call("hostExtensions", { units })).doctrine ?? null;
	} catch {
		// Refused (already resolved by an earlier instance of this session) or gone: workers
		// load what the coordinator decided, and the prompt names nothing it cannot vouch for.
		return null;
	}
}

/**
 * Keep `doctrine()` (when there is one) at the end of the system prompt of every run. The line
 * is the same for the whole session, so the prompt stays the same from run to run. The first
 * run of a session waits for the session's coordinator to have decided.
 */
export function registerDoctrine(pi: ExtensionAPI, doctrine: () => Promise<string | null>): void {
	pi.on("before_agent_start", async (event) => {
		const line = await doctrine();
		if (line === null || event.systemPrompt.includes(line)) {
			return undefined;
		}
		return { systemPrompt: `${event.systemPrompt}\n\n${line}` };
	});
}
