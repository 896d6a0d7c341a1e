package flowcontrol

import "fmt"

// maxHandSize bounds a hand: 60 hash bits cannot deal more distinct cards
// from any deck of two or more.
const maxHandSize = 60

// dealer deals hands of distinct queues from a flow's hash: shuffle
// sharding. A flow always gets the same hand for the same deck, and two
// flows rarely get the same hand, so a heavy flow shares a queue with a
// light one only in part of the light one's hand.
type dealer struct {
	deckSize, handSize int
}

func newDealer(deckSize, handSize int) (dealer, error) {
	switch {
	case deckSize <= 0 || handSize <= 0:
		return dealer{}, fmt.Errorf("deck size %d and hand size %d must be positive", deckSize, handSize)
	case handSize > deckSize:
		return dealer{}, fmt.Errorf("hand size %d is larger than deck size %d", handSize, deckSize)
	case handSize > maxHandSize || entropyBits(deckSize, handSize) > maxHashBits:
		return dealer{}, fmt.Errorf("deck size %d and hand size %d need more than %d hash bits", deckSize, handSize, maxHashBits)
	}
	return dealer{deckSize: deckSize, handSize: handSize}, nil
}

// deal calls pick with each card of the hand of hashValue. The i-th card
// is drawn, as a mixed-radix digit of the hash, from the deckSize-i cards
// not dealt yet.
func (d dealer) deal(hashValue uint64, pick func(card int)) {
	var dealt [maxHandSize]int // sorted ascending
	for i := 0; i < d.handSize; i++ {
		n := uint64(d.deckSize - i)
		card := int(hashValue % n)
		hashValue /= n
		// Skip the cards already dealt: the card-th undealt one.
		j := 0
		for ; j < i && dealt[j] <= card; j++ {
			card++
		}
		copy(dealt[j+1:i+1], dealt[j:i])
		dealt[j] = card
		pick(card)
	}
}
