/**
 * `workerExtensions` (spec 000 "Worker extensions"): the host session's own extensions that
 * Slate loads into every worker too.
 *
 * The extension only reports: once the session's coordinator is up, the load units this pi
 * session has loaded (grouped from `pi.getAllTools()` by each tool's `sourceInfo.path`;
 * pi's built-ins and SDK tools are not extensions) go to `hostExtensions`, and the coordinator
 * decides with the session's patterns which ones workers load, which are withheld and why.
 * The doctrine line it answers is added to this session's prompt guidelines before each run, so
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
 * Report the host's units once the coordinator is up (`client` resolves to it, or to
 * `undefined` when Slate is not running in this session), then keep the doctrine line in the
 * prompt guidelines of every run.
 */
export function registerHostExtensions(pi: ExtensionAPI, client: () => Promise<ControlClient | undefined>): void {
	let doctrine: string | null = null;
	pi.on("session_start", () => {
		doctrine = null;
		void (async () => {
			const c = await client();
			if (c === undefined) {
				return;
			}
			try {
				const units = hostUnits(pi.getAllTools() as ToolProvenance[]);
				doctrine = (await c.call("hostExtensions", { units })).doctrine;
			} catch {
				// Refused (already resolved by an earlier instance) or gone: workers load what
				// the coordinator decided, and the prompt names nothing it cannot vouch for.
			}
		})();
	});
	pi.on("before_agent_start", (event) => {
		const guidelines = event.systemPromptOptions?.promptGuidelines;
		if (doctrine !== null && guidelines !== undefined && !guidelines.includes(doctrine)) {
			guidelines.push(doctrine);
		}
	});
}
