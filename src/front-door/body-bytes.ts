/** The largest request body any edge reads (an operation's JSON body, an MCP message): 64 KiB. */
export const MAX_BODY_BYTES = 64 * 1024;
