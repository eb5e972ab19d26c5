// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// A minimal Uniswap v4 PoolManager stand-in for the DEX price tests (issue 18).
/// It emits exactly v4-core IPoolManager's Initialize, ModifyLiquidity and Swap
/// (same canonical signatures: PoolId is bytes32, Currency and IHooks are
/// addresses; same indexed params), one singleton for every pool, each pool named
/// by its PoolId = keccak256(abi.encode(PoolKey)). The maths is the caller's:
/// each swap gives its amounts and post-swap price; active liquidity follows the
/// real rule (a position whose [tickLower, tickUpper) holds the tick moves it).
/// It holds the tokens (ERC-20 transfers in and out, native coin as msg.value);
/// no locking, hooks or fees.

interface IV4TestToken {
    function transfer(address to, uint256 value) external returns (bool);
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

contract TestV4PoolManager {
    struct PoolKey {
        address currency0;
        address currency1;
        uint24 fee;
        int24 tickSpacing;
        address hooks;
    }

    struct Slot {
        uint160 sqrtPriceX96;
        int24 tick;
        uint128 liquidity;
        uint24 fee;
    }

    mapping(bytes32 => Slot) public pools;

    event Initialize(bytes32 indexed id, address indexed currency0, address indexed currency1, uint24 fee, int24 tickSpacing, address hooks, uint160 sqrtPriceX96, int24 tick);
    event ModifyLiquidity(bytes32 indexed id, address indexed sender, int24 tickLower, int24 tickUpper, int256 liquidityDelta, bytes32 salt);
    event Swap(bytes32 indexed id, address indexed sender, int128 amount0, int128 amount1, uint160 sqrtPriceX96, uint128 liquidity, int24 tick, uint24 fee);

    /// PoolIdLibrary.toId: the keccak of the key's five words.
    function toId(PoolKey memory key) public pure returns (bytes32) {
        return keccak256(abi.encode(key));
    }

    /// As StateLibrary.getSlot0 and getLiquidity read the real one.
    function getSlot0(bytes32 id) external view returns (uint160 sqrtPriceX96, int24 tick, uint24 protocolFee, uint24 lpFee) {
        Slot memory s = pools[id];
        return (s.sqrtPriceX96, s.tick, 0, s.fee);
    }

    function getLiquidity(bytes32 id) external view returns (uint128) {
        return pools[id].liquidity;
    }

    /// As the real one: currencies sorted, once per key; the tick is the caller's (the real one derives it).
    function initialize(PoolKey memory key, uint160 sqrtPriceX96, int24 tick) external returns (bytes32 id) {
        require(key.currency0 < key.currency1, "CurrenciesOutOfOrderOrEqual");
        require(sqrtPriceX96 > 0, "price");
        id = toId(key);
        require(pools[id].sqrtPriceX96 == 0, "PoolAlreadyInitialized");
        pools[id] = Slot(sqrtPriceX96, tick, 0, key.fee);
        emit Initialize(id, key.currency0, key.currency1, key.fee, key.tickSpacing, key.hooks, sqrtPriceX96, tick);
    }

    /// A position's liquidity change; amount0/amount1 are moved in (adding) or out (removing) with it.
    function modifyLiquidity(PoolKey memory key, int24 tickLower, int24 tickUpper, int256 liquidityDelta, bytes32 salt, uint256 amount0, uint256 amount1) external payable {
        bytes32 id = toId(key);
        Slot storage s = pools[id];
        require(s.sqrtPriceX96 != 0, "PoolNotInitialized");
        require(tickLower < tickUpper, "ticks");
        if (s.tick >= tickLower && s.tick < tickUpper) {
            s.liquidity = liquidityDelta >= 0 ? s.liquidity + uint128(uint256(liquidityDelta)) : s.liquidity - uint128(uint256(-liquidityDelta));
        }
        emit ModifyLiquidity(id, msg.sender, tickLower, tickUpper, liquidityDelta, salt);
        if (liquidityDelta >= 0) {
            _take(key.currency0, amount0);
            _take(key.currency1, amount1);
        } else {
            _give(key.currency0, amount0);
            _give(key.currency1, amount1);
        }
    }

    /// A swap with the caller's numbers. The event's amounts are the swapper's balance
    /// deltas, as v4-core's: negative paid in, positive taken out.
    function swap(PoolKey memory key, bool zeroForOne, uint256 amountIn, uint256 amountOut, uint160 sqrtPriceX96After, int24 tickAfter) external payable {
        bytes32 id = toId(key);
        Slot storage s = pools[id];
        require(s.sqrtPriceX96 != 0, "PoolNotInitialized");
        require(amountIn > 0 && amountIn < 2 ** 127 && amountOut < 2 ** 127, "amounts");
        // Selling currency0 lowers its price in currency1, and the reverse.
        require(zeroForOne ? sqrtPriceX96After < s.sqrtPriceX96 : sqrtPriceX96After > s.sqrtPriceX96, "price limit");
        s.sqrtPriceX96 = sqrtPriceX96After;
        s.tick = tickAfter;
        (int128 amount0, int128 amount1) = zeroForOne ? (-int128(int256(amountIn)), int128(int256(amountOut))) : (int128(int256(amountOut)), -int128(int256(amountIn)));
        emit Swap(id, msg.sender, amount0, amount1, sqrtPriceX96After, s.liquidity, tickAfter, s.fee);
        (address tokenIn, address tokenOut) = zeroForOne ? (key.currency0, key.currency1) : (key.currency1, key.currency0);
        _take(tokenIn, amountIn);
        _give(tokenOut, amountOut);
    }

    function _take(address currency, uint256 amount) private {
        if (currency == address(0)) require(msg.value == amount, "native value");
        else if (amount > 0) require(IV4TestToken(currency).transferFrom(msg.sender, address(this), amount), "transferFrom");
    }

    function _give(address currency, uint256 amount) private {
        if (amount == 0) return;
        if (currency == address(0)) {
            (bool ok, ) = payable(msg.sender).call{value: amount}("");
            require(ok, "native transfer");
        } else {
            require(IV4TestToken(currency).transfer(msg.sender, amount), "transfer");
        }
    }
}
