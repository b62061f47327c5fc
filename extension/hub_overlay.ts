/**
 * `/subagent-hub`: the Subagent Hub as a pi overlay. The Hub is Slate's own, drawn by
 * `slate hub --frames` (src/ui/hub/frames.rs) on this session's coordinator; this file only
 * starts it, tells it the overlay's size, forwards keys as pi's key identifiers, and shows
 * the frames it draws. Nothing here lays out, counts or decides: `q` closes the overlay
 * because the Hub exits on it.
 *
 * The overlay covers pi's whole terminal (`width: 100%`, anchored top-left); its height is
 * the terminal's rows, which pi does not pass to `render(width)`, so it is read from
 * `tui.terminal.rows` on every render. A size change is sent to the Hub at once; until its
 * frame at the new size arrives, the previous frame is shown cut to the new width, so no
 * line is ever wider than pi's.
 *
 * Loaded only by pi (index.ts): it imports pi-tui's key parsing. What can be tested without
 * pi is in hub_frames.ts.
 */
import { type ChildProcess, spawn } from "node:child_process";

import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import { decodeKittyPrintable, parseKey, type TUI, truncateToWidth } from "@earendil-works/pi-tui";

import { fitFrame, type HubFrame, type HubInput, hubInputs, parseFrame } from "./hub_frames.ts";

const STDERR_KEEP = 8 * 1024;

/** pi's name for one key's input, if it has one. */
function keyName(data: string): string | undefined {
	return parseKey(data) ?? decodeKittyPrintable(data);
}

/** Opens the Hub overlay and resolves when it closes (with the Hub's error, if it failed). */
export type OpenHub = (ctx: ExtensionCommandContext, hub: { slate: string; socket: string }) => Promise<void>;

export const openHubOverlay: OpenHub = async (
	ctx,
	hub,
) => {
	const failure = await ctx.ui.custom<string | undefined>(
		(tui: TUI, _theme, _keybindings, done) => {
			let frame: HubFrame | undefined;
			let sent: [number, number] | undefined;
			let stderr = "";
			let closed = false;
			const paste = { buffer: undefined as string | undefined };
			const child: ChildProcess = spawn(hub.slate, ["hub", "--frames"], {
				cwd: ctx.cwd,
				env: { ...process.env, SLATE_SOCKET: hub.socket },
				stdio: ["pipe", "pipe", "pipe"],
			});
			const write = (input: HubInput) => {
				if (!closed && child.stdin?.writable === true) {
					child.stdin.write(`${JSON.stringify(input)}\n`);
				}
			};
			const finish = (why: string | undefined) => {
				if (closed) {
					return;
				}
				closed = true;
				done(why);
			};
			child.stdin?.on("error", () => {});
			child.stderr?.setEncoding("utf8");
			child.stderr?.on("data", (chunk: string) => {
				stderr = (stderr + chunk).slice(-STDERR_KEEP);
			});
			let partial = "";
			child.stdout?.setEncoding("utf8");
			child.stdout?.on("data", (chunk: string) => {
				partial += chunk;
				let newline = partial.indexOf("\n");
				let changed = false;
				while (newline !== -1) {
					const parsed = parseFrame(partial.slice(0, newline));
					partial = partial.slice(newline + 1);
					newline = partial.indexOf("\n");
					if (parsed !== undefined) {
						frame = parsed;
						changed = true;
					}
				}
				if (changed) {
					tui.requestRender();
				}
			});
			child.once("error", (error) => finish(`cannot run ${hub.slate}: ${error.message}`));
			child.once("close", (code, signal) => {
				setImmediate(() =>
					finish(code === 0 ? undefined : stderr.trim() || `slate hub exited (${signal ?? `code ${code}`})`),
				);
			});
			return {
				render(width: number): string[] {
					const height = Math.max(1, tui.terminal.rows);
					if (sent === undefined || sent[0] !== width || sent[1] !== height) {
						sent = [width, height];
						write({ size: sent });
					}
					return fitFrame(frame?.rows ?? ["Slate Hub: starting…"], width, height, truncateToWidth);
				},
				handleInput(data: string): void {
					for (const input of hubInputs(data, paste, keyName)) {
						write(input);
					}
				},
				invalidate(): void {},
				dispose(): void {
					closed = true;
					child.stdin?.end();
					if (child.exitCode === null && child.signalCode === null) {
						child.kill("SIGTERM");
					}
				},
			};
		},
		{
			overlay: true,
			overlayOptions: { width: "100%", maxHeight: "100%", anchor: "top-left", margin: 0 },
		},
	);
	if (failure !== undefined) {
		ctx.ui.notify(`The Subagent Hub could not run: ${failure}`, "error");
	}
};
