"""The phrase pools of the load workload (``workload.py`` draws from them): open questions,
their paraphrases and fillers, and the vocabularies of the open and out-of-scope templates."""
from __future__ import annotations

# -- open questions from a fixed pool (cacheable, repeated Zipf-like) ------------------------
CACHEABLE_QUESTIONS = [
    "how far away is mars", "who wrote pride and prejudice", "what is the capital of canada",
    "what is the capital of australia", "how tall is mount everest", "why do birds migrate",
    "how do bees make honey", "what is the speed of sound", "who painted the starry night",
    "when did the titanic sink", "how many bones are in the human body",
    "what is the largest planet", "why is the ocean salty", "how do plants make food",
    "what is a light year", "who invented the printing press",
    "what is the freezing point of water", "how many continents are there",
    "what is the longest bone in the body", "why do we have seasons",
    "what is the hottest planet", "who was isaac newton", "what is an atom",
    "how deep is the ocean", "what is the biggest desert", "how old are the pyramids",
    "who built the great wall of china", "what do koalas eat", "how long do elephants live",
    "why do zebras have stripes", "what is the tallest building in the world",
    "what language is spoken in argentina", "what is the currency of japan",
    "how many strings does a violin have", "who composed the four seasons",
    "what is the chemical symbol for gold", "how fast does light travel",
    "how many teeth does an adult have", "what causes the tides",
    "why does the moon change shape", "what is a volcano", "how are clouds formed",
    "what is the main gas in the air", "who discovered gravity", "what is the largest mammal",
    "how do fish breathe", "why do cats have whiskers", "what is a prime number",
    "what is the capital of italy", "what is the capital of kenya", "who was cleopatra",
    "what is the largest lake in africa", "how many players are on a soccer team",
    "what is the rarest blood type", "why do owls hoot at night", "what is the smallest bird",
    "how does a compass work", "what is the ozone layer", "who invented the bicycle",
    "what is a comet",
]
FILLER_VARIANTS = [("{q}", 5), ("hey {q}", 1), ("{q} please", 1), ("can you tell me {q}", 1),
                   ("ok {q}", 1), ("do you know {q}", 1)]

PARAPHRASE_SETS = [
    ["how far is the moon from the earth", "what is the distance between the earth and the moon",
     "how far away from us is the moon", "whats the distance to the moon",
     "how big is the gap between the earth and the moon"],
    ["why is the sea blue", "why does the sea look blue", "what makes the ocean blue",
     "how come the ocean is blue", "why is the ocean blue in colour"],
    ["who wrote romeo and juliet", "who is the author of romeo and juliet",
     "who was romeo and juliet written by", "which writer wrote romeo and juliet",
     "who penned romeo and juliet"],
    ["how do airplanes stay in the air", "how do planes stay up", "what keeps an airplane in the sky",
     "why dont airplanes fall down", "how does a plane manage to fly"],
    ["what is the capital of germany", "which city is the capital of germany",
     "what city is germanys capital", "name the capital of germany", "whats germanys capital city"],
    ["how many legs does an octopus have", "how many arms does an octopus have",
     "an octopus has how many legs", "count the legs of an octopus for me",
     "number of legs on an octopus"],
    ["why do dogs bark", "what makes dogs bark", "how come dogs bark so much",
     "for what reason do dogs bark", "why does a dog bark"],
    ["what is the tallest animal", "which animal is the tallest", "what animal is the tallest in the world",
     "name the tallest animal", "the tallest animal on earth is what"],
]

# -- new open questions (each one asked once) ------------------------------------------------
_TOPICS = ["the olympic games", "chess", "the violin", "coffee", "tea", "the bicycle", "paper",
           "the printing press", "glass", "chocolate", "the piano", "pizza", "jazz", "football",
           "the roman empire", "ancient egypt", "the vikings", "the silk road", "democracy",
           "the calendar", "photography", "the telescope", "aviation", "the railway", "cinema",
           "the internet", "electricity", "vaccines", "the compass", "money", "writing",
           "mathematics", "astronomy", "medicine", "the wheel", "sushi", "ballet", "opera",
           "basketball", "the guitar"]
_MACHINES = ["refrigerator", "microwave", "dishwasher", "jet engine", "solar panel", "wind turbine",
             "electric car", "submarine", "helicopter", "camera", "vacuum cleaner", "washing machine",
             "toaster", "light bulb", "battery", "smoke detector", "elevator", "escalator",
             "hot air balloon", "lighthouse", "rocket", "bicycle gear", "radio", "loudspeaker",
             "microphone", "printer", "heat pump", "air conditioner", "sewing machine", "zipper"]
_THINGS = ["apples", "bananas", "rice", "wheat", "cotton", "wool", "silk", "honey", "salt", "sugar",
           "butter", "cheese", "bread", "yogurt", "olive oil", "vinegar", "lemons", "oranges",
           "potatoes", "tomatoes"]
_ANIMALS = ["penguins", "dolphins", "octopuses", "owls", "bats", "frogs", "snails", "giraffes",
            "kangaroos", "camels", "sloths", "hedgehogs", "parrots", "sharks", "whales", "bees",
            "ants", "butterflies", "tigers", "wolves", "foxes", "otters", "beavers", "flamingos",
            "peacocks", "crocodiles", "turtles", "squirrels", "hamsters", "rabbits"]
_CONCEPTS = ["inflation", "photosynthesis", "evolution", "gravity waves", "plate tectonics",
             "the water cycle", "compound interest", "supply and demand", "climate change",
             "the greenhouse effect", "black holes", "dna", "the immune system", "electric current",
             "magnetism", "friction", "sound waves", "nuclear energy", "recycling", "erosion",
             "fermentation", "the big bang", "vaccination", "democracy", "taxes", "the stock market",
             "encryption", "a blockchain", "machine learning", "the moon landing"]
_SUBJECTS = ["the sea", "autumn leaves", "a rainy day", "mountains", "the city at night", "a cat",
             "a lighthouse", "friendship", "the desert", "snow", "a garden", "the stars",
             "a river", "a train journey", "the wind", "an old tree", "the sunrise", "a library",
             "a thunderstorm", "the harbour"]
_PLACES = ["iceland", "peru", "japan", "morocco", "norway", "vietnam", "kenya", "scotland",
           "new zealand", "portugal", "mexico", "greece", "canada", "chile", "egypt"]
_SKILLS = ["the guitar", "chess", "swimming", "painting", "knitting", "juggling", "cooking",
           "photography", "sign language", "woodworking", "skiing", "yoga", "baking bread",
           "public speaking", "drawing"]
OPEN_TEMPLATES: list[tuple[str, list]] = [
    ("what is the history of {}", _TOPICS),
    ("how does a {} work", _MACHINES),
    ("give me a fun fact about {}", _ANIMALS),
    ("explain {} in simple words", _CONCEPTS),
    ("write a short poem about {}", _SUBJECTS),
    ("what are the best things to see in {}", _PLACES),
    ("what is a good way to get started with {}", _SKILLS),
    ("where do {} come from", _THINGS),
    ("how is {} made", _THINGS),
    ("what do {} eat", _ANIMALS),
    ("how long do {} live", _ANIMALS),
    ("what is the best season to visit {}", _PLACES),
    ("who invented the {}", _MACHINES),
    ("what is the difference between {} and {}", None),   # pairs of _THINGS
]

# -- requests no skill can carry out ----------------------------------------------------------
_NAMES = ["anna", "ben", "carlos", "dana", "emma", "farid", "grace", "hugo"]
_CUISINES = ["italian", "thai", "indian", "mexican", "japanese", "greek", "french"]
_FOODS = ["pepperoni pizza", "veggie burger", "pad thai", "burrito", "sushi platter", "curry"]
_GENRES = ["jazz", "classical music", "some rock", "the radio", "a podcast", "lo fi beats"]
_ITEMS = ["milk", "eggs", "coffee beans", "dish soap", "bread", "apples", "batteries"]
_EVENTS = ["concert on saturday", "football match", "cinema", "theatre", "museum"]
