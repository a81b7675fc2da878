"""Text handling, written once: used by the offline judge, the claim engine and the test-set generator alike.

Dependency-free (nltk's stemmer is loaded on first use, no data is ever downloaded) and importing
nothing of ragmetrics. The modules: ``normalise`` (the whole-text and quote normalisers),
``tokens`` (word tokens and the model-token estimate), ``sentences`` (sentence spans),
``stopwords`` (function words and the language guess), ``stemming`` (the Porter stemmer),
``numbers`` (numbers and dates) and ``negation`` (negation cues and antonyms).
"""
