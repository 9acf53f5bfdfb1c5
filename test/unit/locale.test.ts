// gateway/pages/locale.ts pageLocale(): the path prefix decides; without one, Accept-Language (negotiator).
import { expect } from 'chai';
import { pageLocale } from '../../gateway/pages/locale.js';

const lang = (header: string | undefined) => pageLocale(undefined, header).lang;

describe('unit: the login pages\u2019 language from Accept-Language', () => {
  it('the spoken language with the highest q; a region counts for its language', () => {
    expect(lang('de-CH,de;q=0.9,en-US;q=0.8,en;q=0.7')).to.equal('de');
    expect(lang('fr-FR,fr;q=0.9,de;q=0.8,en;q=0.7')).to.equal('de');
    expect(lang('en-US,en;q=0.9,de;q=0.8')).to.equal('en');
    expect(lang('en;q=0.4, de;q=0.5')).to.equal('de');
    expect(lang('DE')).to.equal('de');
  });
  it('the first among equals, whatever their specificity', () => {
    expect(lang('de-CH, en')).to.equal('de');
    expect(lang('de;q=0.5, en;q=0.5')).to.equal('de');
    expect(lang('en, de')).to.equal('en');
  });
  it('English when nothing spoken is acceptable: none, q=0, a bad q, wildcard only, garbage', () => {
    for (const h of [undefined, '', 'fr', 'de;q=0', 'de;q=abc', '*', ';;;,,,', 'x'.repeat(10_000)]) expect(lang(h), String(h)).to.equal('en');
  });
  it('reads at most 512 characters of the header', () => {
    expect(lang(`${'fr;q=0.1,'.repeat(60)}de`)).to.equal('en');
  });
  it('the prefix wins over the header', () => {
    expect(pageLocale('en', 'de')).to.deep.equal({ prefix: 'en', lang: 'en', htmlLang: 'en' });
    expect(pageLocale(undefined, 'de')).to.deep.equal({ prefix: undefined, lang: 'de', htmlLang: 'de' });
  });
});
