/**
 * The operator dashboard (browser side). Built by `npm run build:ui` (libs/admin/ui/build.ts) into
 * libs/admin/ui/dist/app.js, which the admin API serves; it talks only to the admin API.
 */
import { startApp } from './shell';

startApp(document.getElementById('app')!);
