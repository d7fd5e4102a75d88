/** The Chromium the view checks run in: Playwright downloads no browser for the kit. */
export const chromiumPath = () => process.env.CHROMIUM_PATH || '/usr/bin/chromium';
