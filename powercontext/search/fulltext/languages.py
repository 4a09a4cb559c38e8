"""Stop words: the function words a query searches without, English and per other language.

Which language a text is in is told elsewhere, once, by a maintained identifier
(``language_id.identify``); this pure module only holds the words. Full text needs each
language's function words ("de", "der", "как") so that they stop counting as a query's topic
(the lexical share and the full-text terms read only content words).

The English list is the classic function-word list. The other lists were written for this
project when they also told languages apart: articles, pronouns, auxiliaries, prepositions,
conjunctions, question words, greetings. They now serve only as stop words (issue 31: a
maintained stop-word source per language is the next step; docs/retrieval.md).
"""

from __future__ import annotations

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
        o a os as um uma uns umas de do da dos das no na nos nas num numa nuns numas ao aos em por pelo pela pelos
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
        allerede i på af til for fra med hos ved efter før mellem bag er var været bliver blev har
        havde kan kunne skal skulle vil må får her der så hej tak farvel godnat
        """,
    "no": """
        en et ei den det de dem denne dette disse og eller men at som om når hva hvem hvilken
        hvilket hvilke hvordan hvorfor hvor jeg du han hun vi dere meg deg ham henne oss seg min
        mitt mine din ditt dine sin sitt sine vår vårt våre ikke ingen intet også bare
        veldig allerede i på av til for fra med hos ved etter før mellom bak er var vært blir ble
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

FUNCTION_WORDS: dict[str, frozenset[str]] = {
    lang: frozenset(words.split()) for lang, words in _FUNCTION_WORDS.items()
}


@lru_cache(maxsize=32)
def stop_words(language: str) -> frozenset[str]:
    """The words a query in ``language`` (``language_id.identify``) searches without: English
    function words, and those of its own language."""
    return ENGLISH_STOP_WORDS | FUNCTION_WORDS.get(language, frozenset())
