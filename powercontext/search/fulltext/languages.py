"""Which language a query is written in, told by its function words, and those words themselves.

The embedding model (all-MiniLM-L6-v2) learned from English sentence pairs. It still reads other
languages written in Latin letters, but less well: unrelated prompts in French, German, Spanish,
Italian, Portuguese, Dutch or Swedish sit at cosine 0.35-0.66 against notes in the same language
(English: 0.11-0.18; Danish, Norwegian, Finnish, Hungarian, Polish, Czech, Indonesian, Turkish up
to 0.52-0.79, which ``embedding.reads`` therefore treats like Chinese, as it does a language no
list tells: ``unlisted``), above the floor calibrated on English (docs/retrieval.md, "Other
languages"). So prepare needs to know when a query is not English, and full text needs each
language's function words ("de", "der", "как") to stop counting them as the query's topic.

A query's language is the one whose function words it holds most, provided it holds more of them
than of the English function words that language does not share ("in" and "so" are German words
too); English wins ties, and a query holding none is English (a prompt such as "Bonjour" is too
little to tell).
Words count as analysed terms (``analyzer.analyze``: case-folded, NFC). Only words that are
neither English function words nor common English words tell a language apart
(``_ENGLISH_HOMOGRAPHS``: "die", "son", "car", "per"...), and no single ASCII letter does. Romance
languages share words ("de", "un", "que"): which of them wins a tie matters little, since every
language but English gets the same floor, and each list holds the function words it shares.

The lists are written for this project: articles, pronouns, auxiliaries, prepositions,
conjunctions, question words, and the words of greeting and thanks (small talk has few function
words: "Merci beaucoup, bonne journée !"). Kept short on purpose: a content word never belongs
here.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

ENGLISH = "en"

# Dropped from every query: the classic English function-word list plus the pieces contractions
# split into ("what's" -> "what", "s").
ENGLISH_STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could d did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just ll m me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own re s same she should so some such t than that the their theirs them
    themselves then there these they this those through to too under until up ve very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    """.split()
)

_FUNCTION_WORDS: dict[str, str] = {
    "fr": """
        le la les l un une des du de d à au aux et ou où que qu qui quoi quel quelle quels quelles
        pour par avec sans dans sur sous chez entre vers ce cet cette ces c ça cela ceci mon ma mes
        ton ta tes son sa ses notre nos votre vos leur leurs je j tu il elle nous vous ils elles
        me m te t se s lui y en on ne n pas plus moins très aussi mais donc car si comme comment
        pourquoi quand combien est sont être suis es sommes êtes été était avoir ai as a avons
        avez ont avait fait faut peut peux veux dois va vais merci bonjour bonsoir salut
        """,
    "de": """
        der die das den dem des ein eine einen einem einer eines und oder aber denn doch sondern
        ich du er sie es wir ihr mich dich sich uns euch mir dir ihm ihn ihnen mein meine dein
        deine sein seine unser euer nicht kein keine keinen auch noch schon nur sehr zu zum zur
        im in am an auf aus bei mit nach von vor für über unter durch gegen ohne um bis
        ist sind bin bist war waren wird werden wurde hat habe hast haben hatte kann können muss
        soll will wie was wer wo wann warum wieso welche welcher welches wohin woher dass ob
        wenn als so da hier dort danke hallo tschüss
        """,
    "es": """
        el la los las lo un una unos unas de del al y e o u que qué quien quién quienes cual cuál
        cuales cuáles cuando cuándo donde dónde adónde como cómo cuanto cuánto cuánta cuántos
        cuántas por para con sin en sobre entre hasta desde hacia este esta esto estos estas ese
        esa eso esos esas mi mis tu tus su sus nuestro nuestra yo tú él ella nosotros vosotros
        ellos ellas me te se nos le les no sí muy también pero porque pues si ya es son soy eres
        somos ser está están estoy estás estar fue era hay ha he has han hace hola gracias adiós
        """,
    "it": """
        il lo la i gli le l un uno una di del dello della dei degli delle a al allo alla ai
        agli alle da dal dalla dai in nel nello nella nei negli nelle con su sul sulla per tra fra
        e ed o ma che chi cui come dove quando perché quale quali quanto quanti quanta quante
        io tu lui lei noi voi loro mi ti si ci vi ne non più molto anche se già è sono sei siamo
        siete essere era stato ho hai ha abbiamo avete hanno c grazie ciao buongiorno buonasera
        """,
    "pt": """
        o a os as um uma uns umas de do da dos das no na nos nas ao aos em por pelo pela pelos
        pelas para com sem sobre entre até e ou mas que quem qual quais quando onde como quanto
        quantos quanta quantas porque eu tu ele ela nós vós eles elas me te se lhe lhes
        meu minha meus minhas seu sua seus suas nosso nossa não sim muito também já é são sou
        somos ser está estão estou estar foi era há tem têm você vocês isso isto esse essa este
        esta aquele aquela obrigado obrigada olá tchau
        """,
    "nl": """
        de het een en of maar want dat die dit deze wat wie waar wanneer waarom hoe welk welke
        hoeveel ik jij je hij zij ze wij we jullie mij me jou hem haar ons hun mijn jouw zijn
        onze niet geen ook nog al wel heel erg te in op aan van voor met bij naar uit over om
        door tot als dan is ben bent zijn was waren wordt worden heeft heb hebt hebben had kan
        kun kunnen moet moeten wil er hier daar s bedankt dank doei
        """,
    "sv": """
        en ett den det de dem denna detta dessa och eller men utan att som om när var vad vem
        vilken vilket vilka hur varför jag du han hon vi ni mig dig honom henne oss er sig min
        mitt mina din ditt dina sin sitt sina vår vårt våra inte ingen inget också bara mycket
        redan än i på av till för från med hos vid under över efter före genom mellan är varit
        blir blev har hade kan kunde ska skulle vill måste får finns här där så hej tack hejdå
        """,
    "pl": """
        i w we z ze na do od o u za po przy przez dla bez nad pod przed między a ale lub albo
        czy że żeby jak jaki jaka jakie jakiego jakiej jaką gdzie kiedy dlaczego czemu co kto ile
        który która które to ten ta te tego tej tym jest są był była było były będzie być mam
        masz ma mamy macie mają jestem jesteś jesteśmy nie tak już też tylko bardzo się mnie mi
        ja ty on ona ono my wy oni one go jej ich mój moja moje twój twoja nasz wasz swój można
        trzeba cześć dziękuję dzięki proszę
        """,
    "cs": """
        a i v ve z ze na do od o u za po při pro bez nad pod před mezi přes k ke s se si ale
        nebo či že aby jak jaký jaká jaké jakou kde kdy proč co kdo kolik který která které to
        ten ta ty toho té tom je jsem jsi jsme jste jsou byl byla bylo byly bude být mám máš má
        máme máte mají ne ano tak už také jen jenom velmi mě mi mne já on ona ono my vy oni mu jí
        jim jeho její jejich můj moje tvůj náš váš svůj lze musí musím ahoj děkuji díky prosím
        """,
    "id": """
        yang dan di ke dari untuk dengan pada dalam oleh tentang atau tetapi tapi karena jika
        kalau agar supaya ini itu apa siapa mana kapan mengapa kenapa bagaimana berapa saya aku
        kamu anda kami kita mereka dia ia tidak bukan belum sudah akan sedang telah bisa dapat
        harus boleh ada adalah juga hanya sangat lebih sekali halo hai terima kasih selamat
        tolong silakan
        """,
    "tr": """
        bir ve bu şu o ne nasıl neden niçin niye nerede nereye kim kimin hangi kaç için ile gibi
        çok daha en mi mı mu mü da de ki ama veya ya ben sen biz siz onlar beni seni bana sana
        var yok değil evet hayır merhaba selam teşekkürler teşekkür sağol lütfen
        """,
    "da": """
        en et den det de dem denne dette disse og eller men at som om når hvad hvem hvilken
        hvilket hvilke hvordan hvorfor hvor hvornår jeg du han hun vi mig dig ham hende os jer
        sig min mit mine din dit dine sin sit sine vores jeres ikke ingen intet også kun meget
        allerede i på af til for fra med hos ved efter før mellem er var været bliver blev har
        havde kan kunne skal skulle vil må får her der så hej tak farvel godnat
        """,
    "no": """
        en et ei den det de dem denne dette disse og eller men at som om når hva hvem hvilken
        hvilket hvilke hvordan hvorfor hvor jeg du han hun vi dere meg deg ham henne oss seg min
        mitt mine din ditt dine sin sitt sine vår vårt våre ikke ingen intet også bare
        veldig allerede i på av til for fra med hos ved etter før mellom er var vært blir ble
        har hadde kan kunne skal skulle vil må får her der så hei takk tusen ha natt
        """,
    "fi": """
        ja on ei se että kun jos mutta tai myös vain hyvin minä sinä hän me te he mikä mitä
        millainen minkä kuka ketä missä mistä mihin minne milloin miksi miten kuinka paljonko
        onko tämä tuo nämä ne olen olet olemme olette ovat oli ole olla voi voiko pitää täytyy
        minun sinun hänen meidän teidän heidän minulla sinulla niin nyt jo vielä kiitos hei moi
        terve nähdään
        """,
    "hu": """
        a az és egy hogy nem is de van vannak volt lesz mi mit ki kit hol hova honnan mikor
        miért hogyan milyen melyik mennyi hány ez ezt azt én te ő ti ők engem téged nekem
        neked meg el fel le be csak már még nagyon szia szervusz köszönöm köszi kérem kérlek
        vagy ha mert amikor aki ami itt ott sem vagyok vagyunk
        """,
    "ru": """
        и в во не что чтобы он она оно они я ты мы вы на с со как а то все всё так его её их но
        да к у же за бы по только мне меня тебя тебе нас вам вас от о об из ему ей им еще ещё
        нет ли если уже или ни быть был была было были будет есть до для при без под над про
        через этот эта это эти тот та те там тут здесь где когда куда откуда почему зачем какой
        какая какое какие кто чем чего сколько можно нужно надо мой моя моё мои твой твоя свой
        """,
}

# Common English words among the lists above: a loanword or a name in an English sentence is
# not another language ("the van", "per request", "Ben", "vi", "MIT").
_ENGLISH_HOMOGRAPHS = frozenset(
    """
    ada agar ai ale ama av aux az bare ben bent bin biz car ci co com comment con dan deg del den
    dia die dig din dir door dos ed em era er et eu go ha halo han hat hay heel hem hun ini io jen
    jest jim kde lo mam mana med meg men min mit mu na nas non nyt od one os oss par pas per plus
    po pod pour pro sans sem sig sim sin soy son su sus ta tack ten til till tom ton um van var vi
    volt war ya yo sit ham mine dine sine vain kit jo
    """.split()
)

FUNCTION_WORDS: dict[str, frozenset[str]] = {
    lang: frozenset(words.split()) for lang, words in _FUNCTION_WORDS.items()
}
# What tells a language from English: its function words that are neither English ones nor
# common English words, nor single ASCII letters ("c", "l", "y" stand for many things in
# English text); and what tells English from it: English function words it does not share.
_DISTINCTIVE: dict[str, frozenset[str]] = {
    lang: frozenset(
        word
        for word in words - ENGLISH_STOP_WORDS - _ENGLISH_HOMOGRAPHS
        if len(word) > 1 or not word.isascii()
    )
    for lang, words in FUNCTION_WORDS.items()
}
_ENGLISH_AGAINST: dict[str, frozenset[str]] = {
    lang: ENGLISH_STOP_WORDS - words for lang, words in FUNCTION_WORDS.items()
}


def language(words: Iterable[str]) -> str:
    """The language of a query's analysed ``words``: a key of ``FUNCTION_WORDS``, or ``ENGLISH``
    (also when nothing tells)."""
    unique = frozenset(words)
    best, count = ENGLISH, 0
    for lang, distinctive in _DISTINCTIVE.items():
        found = len(unique & distinctive)
        if found > count and found > len(unique & _ENGLISH_AGAINST[lang]):
            best, count = lang, found
    return best


_LETTERS = re.compile(r"[^\W\d_]+")


def text_language(text: str) -> str:
    """``language`` of a longer text's words (runs of letters, case-folded, NFC): ~10x cheaper
    than analysing it, and the same answer, since only words can tell a language."""
    return language(_words(text))


def _words(text: str) -> list[str]:
    """A text's words: runs of letters, case-folded, NFC."""
    return _LETTERS.findall(unicodedata.normalize("NFC", text.casefold()))


@lru_cache(maxsize=16)
def _stop_words(lang: str) -> frozenset[str]:
    return ENGLISH_STOP_WORDS | FUNCTION_WORDS.get(lang, frozenset())


def stop_words(words: Iterable[str]) -> frozenset[str]:
    """The words a query of these analysed ``words`` searches without: English function words,
    and those of the query's own language."""
    return _stop_words(language(words))


def unlisted(text: str) -> bool:
    """Whether ``text`` looks written in a language none of the lists here tells: two words or
    more, none of them an English function word, and a letter outside ASCII among them ("Yarın
    hava nasıl olacak?", "Thủ đô của Mông Cổ là gì?"). An English sentence nearly always holds a
    function word; what this takes for another language is a short run of names or terms with
    an accent ("Zürich café menu")."""
    words = _words(text)
    return (
        len(words) >= 2
        and not any(word in ENGLISH_STOP_WORDS for word in words)
        and not all(word.isascii() for word in words)
    )
