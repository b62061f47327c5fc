/** Slate's version (a Rust test keeps it equal to Cargo.toml's) and how both entries introduce themselves to Slate. */
export const EXTENSION_VERSION = "0.1.0";

export const CLIENT = `slate-pi-extension ${EXTENSION_VERSION}`;
