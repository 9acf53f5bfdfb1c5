// The role inside the chat front-end follows the realm at every sign-in, also back and forth
// (found on the real Open WebUI 0.12.4, test/real-open-webui/api.test.ts): a user promoted, then
// demoted again within the gateway's upstream sign-in cache time must be told the demotion.
import { expect } from 'chai';
import { demoAccounts } from '../../sandbox/demo-realm.js';
import { browse, signIn, startWorld, type World } from '../support/cookie-jar.js';

describe('the upstream role follows the realm at every sign-in, back and forth', function () {
  this.timeout(30_000);
  const accounts = demoAccounts.map((a) => ({ ...a, roles: [...a.roles] }));
  const alice = accounts.find((a) => a.username === 'alice')!;
  let w: World;
  before(async () => {
    w = await startWorld({ accounts });
  });
  after(async () => {
    await w?.close();
  });

  it('user, then admin, then user again: the chat front-end ends with the role the realm gives last', async () => {
    const role = async () => (await browse((await signIn(w.url, 'alice')).jar, '/api/v1/auths/')).json<{ role: string }>().role;
    expect(await role()).to.equal('user');
    alice.roles = ['PlatformSysAdmin'];
    expect(await role()).to.equal('admin');
    alice.roles = [];
    expect(await role()).to.equal('user');
  });
});
