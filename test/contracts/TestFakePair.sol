// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// A contract that claims to be a Uniswap V2 pair of a factory that never made it (issue 18's review): it names the
/// factory and tokens it likes and emits Sync and Swap with any numbers. Prices must never read it.
contract TestFakePair {
    address public factory;
    address public token0;
    address public token1;

    event Sync(uint112 reserve0, uint112 reserve1);
    event Swap(address indexed sender, uint amount0In, uint amount1In, uint amount0Out, uint amount1Out, address indexed to);

    constructor(address factory_, address token0_, address token1_) {
        factory = factory_;
        token0 = token0_;
        token1 = token1_;
    }

    /// A "swap" that moves nothing: a Sync with the reserves given, then `times` Swap logs.
    function fake(uint112 reserve0, uint112 reserve1, uint256 times) external {
        emit Sync(reserve0, reserve1);
        for (uint256 i = 0; i < times; i++) emit Swap(msg.sender, 1, 0, 0, 1, msg.sender);
    }
}
