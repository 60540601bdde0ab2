// SPDX-License-Identifier: Apache-2.0
/**
 * abuseguard's Node.js client: the checks and reports of its HTTP API
 * with the fail modes, deadline, retries and breaker of clients/README.md,
 * and the helpers an integration needs around them. Standard library only.
 */
export { Client } from './lib/client.js';
export { UsageError } from './lib/errors.js';
export { passwordFingerprint } from './lib/passwords.js';
export { clientIp } from './lib/client-ip.js';
export { deviceCookieName, deviceCookie, deviceTokenFromCookies } from './lib/cookies.js';
export { verifyWebhook } from './lib/webhook.js';
