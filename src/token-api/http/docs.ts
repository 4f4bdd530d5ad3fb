import express, { type Express } from 'express';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';

/**
 * The interactive reference at /docs: Swagger UI from the swagger-ui-dist npm package, served by us (no CDN), rendering
 * /openapi.json. The initializer is a file rather than an inline script so a strict CSP (script-src 'self') works.
 */
export function mountDocs(app: Express): void {
  const assets = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>l2stack token data API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;
  const init = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: 'BaseLayout',
});
`;
  const csp = "default-src 'self'; img-src 'self' data: https:; style-src 'self' 'unsafe-inline'; script-src 'self'";
  app.get(['/docs', '/docs/'], (_req, res) => {
    res.setHeader('Content-Security-Policy', csp);
    res.type('html').send(page);
  });
  app.get('/docs/init.js', (_req, res) => res.type('application/javascript').send(init));
  app.use('/docs/assets', express.static(assets, { index: false, maxAge: '1d', fallthrough: true }));
}
