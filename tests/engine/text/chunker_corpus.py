"""Texts for the chunker tests: tricky cases with their exact chunks, long texts, realistic replies."""

from __future__ import annotations

import itertools

from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker


def chunk_all(text: str, pieces: list[str] | None = None, **options: object) -> list[str]:
    """Feeds ``pieces`` (default: the whole text) then flushes; returns every chunk in order."""
    chunker = IncrementalSentenceChunker(**options)
    out: list[str] = []
    for piece in [text] if pieces is None else pieces:
        out.extend(chunker.feed(piece))
    rest = chunker.flush()
    if rest is not None:
        out.append(rest)
    return out


def split_at(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted(set(cuts)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


LATER = {"early_first_fragment": False}
"""Sentence rules without the early first fragment, so a case shows one rule at a time."""
AT_MAX = {"first_cut": "at-max"}
"""The first fragment's phrase cut decided at the 12th word (the rule before eager cuts), so a case shows the
other rules without an eager cut in the way."""
PHRASE = {"first_cut": "phrase"}
"""Eager cuts before a preposition too (the default before clause-first cuts)."""

# (id, text, options, expected chunks)
CASES: list[tuple[str, str, dict, list[str]]] = [
    # ---- the early first fragment -------------------------------------------------------------------
    (
        "first-fragment-at-comma",
        "Well, I think that the best approach here, given your constraints, would be to wait.",
        {},
        ["Well, I think that the best approach here,", "given your constraints, would be to wait."],
    ),
    (
        "first-fragment-is-a-whole-short-sentence",
        "Sure, I can help with that. The weather is sunny today, with highs near seventy.",
        {},
        ["Sure, I can help with that.", "The weather is sunny today, with highs near seventy."],
    ),
    (
        "first-fragment-forced-after-12-words",
        "one two three four five six seven eight nine ten eleven twelve thirteen fourteen.",
        {},
        ["one two three four five six seven eight nine ten eleven twelve", "thirteen fourteen."],
    ),
    (
        "first-fragment-waits-for-3-words",
        "Hi. How are you doing today, my friend?",
        {},
        ["Hi. How are you doing today,", "my friend?"],
    ),
    (
        "first-fragment-at-colon",
        "Here is the plan: we leave at noon and drive north.",
        {},
        ["Here is the plan:", "we leave at noon and drive north."],
    ),
    (
        "first-fragment-at-em-dash",
        "I went to the store—no, I ran there.",
        {},
        ["I went to the store—", "no, I ran there."],
    ),
    (
        "first-fragment-at-spaced-hyphen",
        "The answer is simple - we wait for it.",
        {},
        ["The answer is simple -", "we wait for it."],
    ),
    (
        "first-fragment-at-double-hyphen",
        "I was going to go--but then it rained on everyone.",
        {},
        ["I was going to go--", "but then it rained on everyone."],
    ),
    (
        "forced-cut-never-after-a-title",
        "one two three four five six seven eight nine ten eleven Dr. Smith arrived late today.",
        {},
        ["one two three four five six seven eight nine ten eleven Dr. Smith", "arrived late today."],
    ),
    # ---- the forced first cut lands at a phrase boundary (engine.text.chunking.first_cut) --------------------
    (
        "clause-first-cut-before-and",  # the first clause opener with five words before it
        "Please turn on all of the lights in the house and close every single window upstairs now.",
        {},
        ["Please turn on all of the lights in the house", "and close every single window upstairs now."],
    ),
    (
        "clause-first-cut-not-before-a-preposition",  # one call, one intonation: not "of water | to the"
        "Add one half cup of water to the reservoir. Then press start.",
        {},
        ["Add one half cup of water to the reservoir.", "Then press start."],
    ),
    (
        "clause-first-cut-phrase-boundary-in-a-long-clause",  # no clause opener by the 12th word
        "Let me check the current thermostat settings in the living room for you. It only takes a moment.",
        {},
        ["Let me check the current thermostat settings in the living room", "for you.", "It only takes a moment."],
    ),
    (
        "clause-first-cut-needs-five-words-before-it",  # not "I went | to", "The cat sat | on"
        "I went to the shop and bought bread for the week.",
        {},
        ["I went to the shop", "and bought bread for the week."],
    ),
    (
        "phrase-first-cut-at-the-first-preposition",  # at the 12th word it was cut back to "...living room |"
        "Let me check the current thermostat settings in the living room for you. It only takes a moment.",
        PHRASE,
        ["Let me check the current thermostat settings", "in the living room for you.", "It only takes a moment."],
    ),
    (
        "phrase-first-cut-before-a-preposition",
        "Please turn on all of the lights in the house and close every single window upstairs now.",
        PHRASE,
        ["Please turn on all of the lights", "in the house and close every single window upstairs now."],
    ),
    (
        "phrase-first-cut-not-between-a-number-and-its-unit",
        "Set the heating to 21 °C in the living room tonight.",
        PHRASE,
        ["Set the heating to 21 °C", "in the living room tonight."],
    ),
    (
        "phrase-first-cut-only-for-the-first-fragment",
        "Sure thing, I will do that. Let me check the current thermostat settings in the living room for you.",
        PHRASE,
        ["Sure thing, I will do that.", "Let me check the current thermostat settings in the living room for you."],
    ),
    (
        "forced-cut-before-a-preposition-not-inside-the-living-room",
        "Let me check the current thermostat settings in the living room for you. It only takes a moment.",
        AT_MAX,
        ["Let me check the current thermostat settings in the living room", "for you.", "It only takes a moment."],
    ),
    (
        "forced-cut-never-after-enough",
        "So I was just wondering whether or not we would have enough time to do this.",
        {},
        ["So I was just wondering", "whether or not we would have enough time to do this."],
    ),
    (
        "forced-cut-before-to",
        "I do not think we will have enough time to finish all of the work before the deadline tomorrow.",
        {},
        ["I do not think we will have enough time", "to finish all of the work before the deadline tomorrow."],
    ),
    (
        "forced-cut-never-after-the-or-inside-its-phrase",
        "Could you please turn down the heat a bit in the living room tonight?",
        {},
        ["Could you please turn down the heat a bit", "in the living room tonight?"],
    ),
    (
        "forced-cut-prefers-a-conjunction",
        "I checked the weather for tomorrow morning and it looks like it will rain all day long.",
        {},
        ["I checked the weather for tomorrow morning", "and it looks like it will rain all day long."],
    ),
    (
        "forced-cut-before-and-not-inside-a-phrasal-verb",
        "Please turn on all of the lights in the house and close every single window upstairs now.",
        AT_MAX,
        ["Please turn on all of the lights in the house", "and close every single window upstairs now."],
    ),
    (
        "forced-cut-before-a-preposition-not-before-the-article",
        "There is a ninety percent chance of heavy rain in Seattle over the next three days.",
        AT_MAX,
        ["There is a ninety percent chance of heavy rain in Seattle", "over the next three days."],
    ),
    (
        "forced-cut-before-a-subordinate-clause",
        "I'm going to need a little more information before I can book the flight for you.",
        {},
        ["I'm going to need a little more information", "before I can book the flight for you."],
    ),
    (
        "forced-cut-waits-a-few-words-for-a-conjunction",
        "Okay so the new smart thermostat firmware update fixes several annoying temperature sensor bugs and more.",
        {},
        [
            "Okay so the new smart thermostat firmware update fixes several annoying temperature sensor bugs",
            "and more.",
        ],
    ),
    (
        "forced-cut-waits-for-the-sentence-end",
        "The new smart thermostat firmware update fixes several annoying temperature sensor calibration bugs "
        "reported recently. Done.",
        {},
        [
            "The new smart thermostat firmware update fixes several annoying temperature sensor calibration bugs "
            "reported recently.",
            "Done.",
        ],
    ),
    (
        "forced-cut-past-the-bound-without-a-function-word",
        "The new smart thermostat firmware update fixes several annoying temperature sensor calibration bugs "
        "reported recently nationwide yesterday evening.",
        {},
        [
            "The new smart thermostat firmware update fixes several annoying temperature sensor calibration bugs "
            "reported recently nationwide",
            "yesterday evening.",
        ],
    ),
    (
        "forced-cut-never-before-a-sentence-end-it-could-have-waited-for",
        "Let me check the current thermostat settings in the big living room. Thanks a lot for waiting.",
        AT_MAX,
        ["Let me check the current thermostat settings in the big living room.", "Thanks a lot for waiting."],
    ),
    (
        "forced-cut-in-another-language-keeps-the-plain-rule",
        "Je pense que nous devrions partir demain matin très tôt pour éviter les embouteillages sur la route.",
        {},
        ["Je pense que nous devrions partir demain matin très tôt pour éviter", "les embouteillages sur la route."],
    ),
    (
        "the-rest-of-a-cut-sentence-is-not-merged",
        "Well, I think so, yes. And then we left together for the day.",
        {},
        ["Well, I think so,", "yes.", "And then we left together for the day."],
    ),
    (
        "no-early-fragment-when-disabled",
        "Well, I think that the best approach here, given your constraints, would be to wait. Then go.",
        LATER,
        ["Well, I think that the best approach here, given your constraints, would be to wait.", "Then go."],
    ),
    # ---- sentence ends ------------------------------------------------------------------------------
    (
        "period-bang-question",
        "This is the first sentence. This is the second sentence! Is this the third one? Yes it is.",
        {},
        ["This is the first sentence.", "This is the second sentence!", "Is this the third one?", "Yes it is."],
    ),
    (
        "ellipsis-ends-before-a-capital",
        "I was thinking about it... And then I decided to go home.",
        {},
        ["I was thinking about it...", "And then I decided to go home."],
    ),
    (
        "ellipsis-inside-a-sentence",
        "I was thinking... maybe we should go home now.",
        {},
        ["I was thinking... maybe we should go home now."],
    ),
    (
        "unicode-ellipsis-inside",
        "Well… that is a surprise to everyone here. Nobody expected it.",
        LATER,
        ["Well… that is a surprise to everyone here.", "Nobody expected it."],
    ),
    (
        "spaced-ellipsis-inside",
        "I wonder . . . what happens next in the story.",
        AT_MAX,
        ["I wonder . . . what happens next in the story."],
    ),
    (
        "interrobang-run",
        "You did what?! That is completely unbelievable, honestly.",
        {},
        ["You did what?!", "That is completely unbelievable, honestly."],
    ),
    (
        "closing-quote-stays",
        'She looked at me and said "Stop right there!" Then she left the room.',
        {},
        ['She looked at me and said "Stop right there!"', "Then she left the room."],
    ),
    (
        "quoted-question-then-lowercase-runs-on",
        '"Are you sure about this?" he asked me quietly. I nodded slowly in reply.',
        {},
        ['"Are you sure about this?" he asked me quietly.', "I nodded slowly in reply."],
    ),
    (
        "closing-bracket-stays",
        "The results were clear (see the appendix.) We moved on to the next topic.",
        {},
        ["The results were clear (see the appendix.)", "We moved on to the next topic."],
    ),
    (
        "curly-quotes-stay",
        "He said “we are done here.” Then everyone went home for the night.",
        {},
        ["He said “we are done here.”", "Then everyone went home for the night."],
    ),
    (
        "markdown-emphasis-stays",
        "The service restarts at **midnight.** Save your work first, please.",
        LATER,
        ["The service restarts at **midnight.**", "Save your work first, please."],
    ),
    (
        "sentence-ending-in-a-number",
        "The answer is 42. Everything else is just noise.",
        {},
        ["The answer is 42.", "Everything else is just noise."],
    ),
    (
        "emoji-after-a-sentence",
        "Great job on the release! 🎉 Keep going, you are close.",
        {},
        ["Great job on the release!", "🎉 Keep going, you are close."],
    ),
    # ---- abbreviations, titles, initials --------------------------------------------------------------
    (
        "titles",
        "I met Dr. Smith and Mrs. Jones at the clinic yesterday. They were very kind to me.",
        {},
        ["I met Dr. Smith and Mrs. Jones at the clinic yesterday.", "They were very kind to me."],
    ),
    (
        "more-titles-and-vs",
        "Prof. Brown and St. Louis fans vs. Cubs fans argued all day. Mr. Lee and Ms. Park left early.",
        LATER,
        ["Prof. Brown and St. Louis fans vs. Cubs fans argued all day.", "Mr. Lee and Ms. Park left early."],
    ),
    (
        "eg-and-ie-never-end",
        "Pick a fruit, e.g. Apples or pears, i.e. Something sweet and fresh. Then eat it.",
        LATER,
        ["Pick a fruit, e.g. Apples or pears, i.e. Something sweet and fresh.", "Then eat it."],
    ),
    (
        "etc-ends-before-a-capital",
        "We bought apples, pears, plums, etc. Then we went home together.",
        LATER,
        ["We bought apples, pears, plums, etc.", "Then we went home together."],
    ),
    (
        "etc-runs-on-before-lowercase",
        "We bought apples, pears, etc. and then we went home. It was late.",
        LATER,
        ["We bought apples, pears, etc. and then we went home.", "It was late."],
    ),
    (
        "dotted-abbreviation-runs-on",
        "He moved to the U.S. Army base in Texas last year. It was very hot there.",
        LATER,
        ["He moved to the U.S. Army base in Texas last year.", "It was very hot there."],
    ),
    (
        "am-ends-before-a-capital",
        "The meeting starts at 9 a.m. Please arrive ten minutes early for it.",
        LATER,
        ["The meeting starts at 9 a.m.", "Please arrive ten minutes early for it."],
    ),
    (
        "pm-runs-on-before-lowercase",
        "We close at 5 p.m. sharp every single day of the week.",
        LATER,
        ["We close at 5 p.m. sharp every single day of the week."],
    ),
    (
        "initials",
        "J. R. R. Tolkien wrote The Lord of the Rings. It is a long book indeed.",
        LATER,
        ["J. R. R. Tolkien wrote The Lord of the Rings.", "It is a long book indeed."],
    ),
    (
        "the-pronoun-i-is-not-an-initial",
        "Nobody else wanted to go there, but so did I. Then we left together.",
        LATER,
        ["Nobody else wanted to go there, but so did I.", "Then we left together."],
    ),
    (
        "no-before-a-number",
        "Please see item No. 5 in the list below. It explains everything.",
        LATER,
        ["Please see item No. 5 in the list below.", "It explains everything."],
    ),
    (
        "no-as-a-word-ends",
        "I asked if he agreed, and he said No. Then he walked away from me.",
        LATER,
        ["I asked if he agreed, and he said No.", "Then he walked away from me."],
    ),
    (
        "month-before-a-day",
        "The launch is set for Jan. 15 next year, weather permitting. Stay tuned for news.",
        LATER,
        ["The launch is set for Jan. 15 next year, weather permitting.", "Stay tuned for news."],
    ),
    (
        "figure-before-a-number",
        "As shown in Fig. 3 the curve rises sharply. Table 2 shows the rest of it.",
        LATER,
        ["As shown in Fig. 3 the curve rises sharply.", "Table 2 shows the rest of it."],
    ),
    (
        "inc-before-lowercase",
        "She works for Acme Inc. and lives in London with her family. Nice to meet her.",
        LATER,
        ["She works for Acme Inc. and lives in London with her family.", "Nice to meet her."],
    ),
    # ---- numbers, versions, times, addresses ----------------------------------------------------------
    (
        "decimals",
        "Pi is about 3.14159 and e is about 2.71828 in value. Both are irrational numbers.",
        LATER,
        ["Pi is about 3.14159 and e is about 2.71828 in value.", "Both are irrational numbers."],
    ),
    (
        "versions",
        "Upgrade from v1.2.3 to version 2.0.1 before Friday. It fixes the crash on start.",
        LATER,
        ["Upgrade from v1.2.3 to version 2.0.1 before Friday.", "It fixes the crash on start."],
    ),
    (
        "money",
        "The price is $12.50 today, down from $15.99 last week. That is a good deal.",
        LATER,
        ["The price is $12.50 today, down from $15.99 last week.", "That is a good deal."],
    ),
    (
        "times",
        "We meet at 10:30 or at 14:45:30 sharp. Do not be late, please.",
        LATER,
        ["We meet at 10:30 or at 14:45:30 sharp.", "Do not be late, please."],
    ),
    (
        "thousands-separators",
        "The population grew to 1,234,567 people by 2020. Growth slowed after that.",
        LATER,
        ["The population grew to 1,234,567 people by 2020.", "Growth slowed after that."],
    ),
    (
        "url-and-email",
        "Visit https://example.com/a.b?c=d for details. Then email support@example.co.uk with questions.",
        LATER,
        ["Visit https://example.com/a.b?c=d for details.", "Then email support@example.co.uk with questions."],
    ),
    (
        "www-and-file-names",
        "Open www.example.org/docs/index.html in a browser. Then read report.pdf carefully.",
        LATER,
        ["Open www.example.org/docs/index.html in a browser.", "Then read report.pdf carefully."],
    ),
    (
        "url-ending-a-sentence",
        "The docs live at https://docs.example.com/guide. Read them first, please.",
        LATER,
        ["The docs live at https://docs.example.com/guide.", "Read them first, please."],
    ),
    (
        "ranges-hyphens-and-negatives-do-not-cut",
        "A well-known 10–12 year-old saw -5 degrees and ran --quickly home today.",
        AT_MAX,
        ["A well-known 10–12 year-old saw -5 degrees and ran --quickly home today."],
    ),
    # ---- lines and lists ------------------------------------------------------------------------------
    (
        "numbered-list-markers-are-not-sentences",
        "Here are the steps:\n1. Open the box\n2. Remove the cover\n3. Plug it in and wait",
        {},
        ["Here are the steps:", "1. Open the box\n2. Remove the cover", "3. Plug it in and wait"],
    ),
    (
        "numbered-list-with-periods",
        "Steps follow.\n\n1. Open the lid of the box.\n2. Take out the cable.\n",
        LATER,
        ["Steps follow.\n\n1. Open the lid of the box.", "2. Take out the cable."],
    ),
    (
        "a-number-mid-line-may-end-a-sentence",
        "We waited for the count of 3. Then we all jumped into the lake.",
        LATER,
        ["We waited for the count of 3.", "Then we all jumped into the lake."],
    ),
    (
        "newlines-end-sentences",
        "First line without punctuation\nSecond line also without any\n",
        LATER,
        ["First line without punctuation", "Second line also without any"],
    ),
    (
        "crlf-and-blank-lines",
        "Paragraph one is right here.\r\n\r\nParagraph two follows it now.",
        {},
        ["Paragraph one is right here.", "Paragraph two follows it now."],
    ),
    (
        "bullets",
        "Options:\n- red apples\n- green pears and more",
        LATER,
        ["Options:\n- red apples", "- green pears and more"],
    ),
    (
        "tabs-and-runs-of-spaces",
        "  \t Leading   whitespace\tand   tabs are   kept inside.  Next sentence here.",
        {},
        ["Leading   whitespace\tand   tabs are   kept inside.", "Next sentence here."],
    ),
    (
        "a-date-keeps-its-year",
        "Your alarm is set for 6:45 AM on March 15, 2025. Sleep well.",
        {},
        ["Your alarm is set for 6:45 AM on March 15, 2025.", "Sleep well."],
    ),
    (
        "a-day-comma-before-a-word-still-cuts",
        "We will meet on the 15th, then we will go home to rest.",
        {},
        ["We will meet on the 15th,", "then we will go home to rest."],
    ),
    (
        "french-spaced-closing-quote-stays",
        "Il a crié : « Au secours, venez vite ! » Puis il est parti.",
        {},
        ["Il a crié :", "« Au secours, venez vite ! »", "Puis il est parti."],
    ),
    # ---- CJK ------------------------------------------------------------------------------------------
    (
        "chinese",
        "你好，我是一个机器人。今天天气很好！我们去公园吧？",
        {},
        ["你好，我是一个机器人。", "今天天气很好！我们去公园吧？"],
    ),
    (
        "japanese-quote-closer-stays",
        "「こんにちは。」と彼は言った。それから帰った。",
        {},
        ["「こんにちは。」と彼は言った。", "それから帰った。"],  # と quotes it: the sentence goes on
    ),
    (
        "cjk-with-ascii-punctuation",
        "你好,我是一个机器人!今天天气很好,我们去公园吧.",
        {},
        ["你好,我是一个机器人!", "今天天气很好,我们去公园吧."],
    ),
    (
        "cjk-long-enough-sentences",
        "我们明天早上八点在学校门口见面。请不要迟到，谢谢大家的配合。",
        LATER,
        ["我们明天早上八点在学校门口见面。", "请不要迟到，谢谢大家的配合。"],
    ),
    # ---- the floor: short sentences merge -------------------------------------------------------------
    (
        "short-sentences-merge-into-the-next",
        "Okay, let me see what I can do. Hi. Ok. Sure. Let me check that for you right now.",
        {},
        ["Okay, let me see what I can do.", "Hi. Ok. Sure. Let me check that for you right now."],
    ),
    (
        "short-last-sentence-comes-out-at-flush",
        "That is the first long sentence here. Ok.",
        {},
        ["That is the first long sentence here.", "Ok."],
    ),
    (
        "no-punctuation-at-all",
        "just some words with no punctuation at all",
        AT_MAX,
        ["just some words with no punctuation at all"],
    ),
    (
        "punctuation-only",
        "... !!! ???",
        {},
        ["... !!! ???"],
    ),
]


CLAUSES = [
    "the committee reviewed the proposal in great detail",
    "considering every possible objection raised by the members",
    "including those who had written lengthy letters of complaint",
    "and after many hours of deliberation",
    "which stretched well into the night",
    "they finally reached a decision that satisfied almost everyone",
    "although a few people remained unconvinced",
    "and promised to raise the matter again at the next meeting",
]
LONG_SENTENCE = "In the end, " + ", ".join(CLAUSES * 3) + "."
NO_PUNCTUATION = " ".join(f"word{i}" if i % 7 == 0 else "alpha" for i in range(400))
LONG_TEXTS = {
    "long-sentence": LONG_SENTENCE,
    "no-punctuation": NO_PUNCTUATION,
    "giant-token": "x" * 2000,
    "big-numbers": " ".join(str(7_777_777 + i) for i in range(150)),
    "money": "$777,777.77 " * 150,
    "acronyms": "WWW " * 300,
    "emoji": "🎉 " * 300,
    "chinese-without-punctuation": "我们明天早上八点在学校门口见面请不要迟到谢谢大家的配合" * 10,
}


REALISTIC = [case[1] for case in CASES] + [
    LONG_SENTENCE,
    "Sure! Here's a quick summary of the report. Revenue grew 12.5% to $3.2 billion in Q3, driven by "
    "cloud services (up 28%) and advertising. Operating costs rose 4%, mainly due to hiring; margins "
    'improved anyway. Dr. Chen, the CFO, said: "We\'re on track." Next steps:\n1. Review the budget.\n'
    "2. Meet the U.S. team at 9:30 a.m. on Jan. 5.\n3. Send the deck to cfo@example.com by Friday.",
    "I'm not sure... let me think. Okay—so the short answer is yes, but there are caveats: the API "
    "(v2.1.0) only supports UTF-8, the rate limit is 1,000 requests/minute, and timeouts default to 30s. "
    "See https://docs.example.com/api/v2.1/limits?lang=en for details, e.g. burst handling, retries, etc. "
    "Does that help? Let me know!",
]
