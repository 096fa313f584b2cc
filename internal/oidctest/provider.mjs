// A real OpenID provider for mcpq's OAuth tests: oidc-provider (npm, the
// version scripts/lib.sh need_oidc_provider installs) on a loopback port,
// configured as an authorization server for mcpq's MCP endpoint
// (internal/oidctest/oidctest.go starts it; docs/auth.md says what mcpq
// checks):
//   - JWT access tokens (ES256) whose audience is the RFC 8707 resource
//     indicator: the resources of --resource are accepted, and their scopes
//     are mcp:tools and mcp:admin;
//   - client credentials, authorization code with PKCE (S256), refresh
//     tokens, open dynamic client registration, introspection;
//   - the development login and consent pages, which a test fills in over
//     HTTP (any login and password sign in as the login);
//   - POST /_test/rotate: publish a new signing key and drop the others, so
//     tokens signed before are signed by a rotated-out key.
// Usage: node provider.mjs MODULE PORT CONFIG_JSON
//   MODULE       the path of oidc-provider's package folder
//   PORT         the loopback port to listen on
//   CONFIG_JSON  {"resources": [...], "clients": [...], "accessTokenTTL": s,
//                "shortTTLClients": [client ids whose tokens live 2 s]}
// Prints one JSON line {"issuer": ...} on stdout once it listens.
import http from 'node:http';
import path from 'node:path';
import crypto from 'node:crypto';
import { pathToFileURL } from 'node:url';

const [moduleDir, port, configJSON] = process.argv.slice(2);
const pkg = await import(pathToFileURL(path.join(moduleDir, 'lib', 'index.js')).href);
const Provider = pkg.default;
const { errors } = pkg;
const cfg = JSON.parse(configJSON);
const issuer = `http://127.0.0.1:${port}`;
const resources = new Set(cfg.resources);
const shortLived = new Set(cfg.shortTTLClients || []);
const accessTokenTTL = cfg.accessTokenTTL || 600;
const cookieKeys = [crypto.randomBytes(32).toString('hex')];

let keyCount = 0;
function newKey() {
  const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  keyCount += 1;
  return { ...privateKey.export({ format: 'jwk' }), kid: `k${keyCount}`, alg: 'ES256', use: 'sig' };
}

function ttlFor(client) {
  return client && shortLived.has(client.clientId) ? 2 : accessTokenTTL;
}

function configuration(keys) {
  return {
    clients: cfg.clients,
    jwks: { keys },
    cookies: { keys: cookieKeys },
    scopes: ['openid', 'offline_access', 'mcp:tools', 'mcp:admin'],
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      id_token_signed_response_alg: 'ES256',
    },
    responseTypes: ['code'],
    pkce: { required: () => true },
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    ttl: {
      AccessToken: (ctx, token, client) => ttlFor(client),
      ClientCredentials: (ctx, token, client) => ttlFor(client),
    },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (ctx, client, oneOf) => oneOf,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (ctx, resource) => {
          if (!resources.has(resource)) throw new errors.InvalidTarget();
          return {
            scope: 'mcp:tools mcp:admin',
            audience: resource,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
  };
}

let keys = [newKey()];
let provider = new Provider(issuer, configuration(keys));

const server = http.createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/_test/rotate') {
    keys = [newKey()];
    provider = new Provider(issuer, configuration(keys));
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ kid: keys[0].kid }));
    return;
  }
  provider.callback()(req, res);
});
server.listen(Number(port), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
